package yamlflow

import (
	"strings"
	"testing"
)

func TestLooksSecret(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "DB_PASSWORD": true, "AWS_SECRET_ACCESS_KEY": true,
		"SWITCHYARD_TOKEN": true, "PGPASSWORD": true, "GOPATH": false, "NODE_ENV": false, "KEYBOARD": false,
		"MONKEY": false, "LANG": false, "HOME": false,
	} {
		if got := LooksSecret(name); got != want {
			t.Errorf("LooksSecret(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestPassEnvSecretWarns(t *testing.T) {
	src := "name: t\ndescription: d\npass_env: [GOPATH, GITHUB_TOKEN]\nnodes:\n  - id: a\n    bash: echo hi\n"
	wf, diags, err := Parse("t.yaml", []byte(src))
	if err != nil || wf == nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diags {
		if d.Code == CodeSecretPassEnv {
			got = append(got, d.Message)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "GITHUB_TOKEN") {
		t.Errorf("warnings %v", got)
	}
	if len(wf.PassEnv) != 2 {
		t.Errorf("pass_env %v: a warning must not drop the name", wf.PassEnv)
	}
}
