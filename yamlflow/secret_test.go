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
	src := "name: t\ndescription: d\npass_env: [GOPATH, GITHUB_TOKEN, OPENAI_API_KEY]\nnodes:\n  - id: a\n    bash: echo hi\n"
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
	if len(got) != 2 || !strings.Contains(got[0], `"GITHUB_TOKEN" looks like a secret`) ||
		!strings.Contains(got[1], `"OPENAI_API_KEY" is one of Switchyard's own secrets: a workflow's pass_env never passes it`) {
		t.Errorf("warnings %v", got)
	}
	if len(wf.PassEnv) != 3 {
		t.Errorf("pass_env %v: a warning must not drop the name", wf.PassEnv)
	}
}

func TestOwnSecret(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "SWITCHYARD_TOKEN": true, "SWITCHYARD_DB": true,
		"GITHUB_TOKEN": false, "OPENAI_BASE_URL": false, "MY_OPENAI_API_KEY": false,
	} {
		if got := OwnSecret(name); got != want {
			t.Errorf("OwnSecret(%q) = %v, want %v", name, got, want)
		}
	}
}
