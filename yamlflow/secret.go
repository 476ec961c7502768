package yamlflow

import (
	"regexp"
	"strings"
)

// secretNameRE matches environment variable names that usually hold
// credentials.
var secretNameRE = regexp.MustCompile(`(?i)(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|PRIVATE|AUTH|SESSION|COOKIE|DSN)(_|$)|PASSWORD$`)

// LooksSecret reports whether an environment variable's name suggests a
// secret (OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD, ...): passing it to
// nodes (pass_env, serve --pass-env) hands it to whatever they run.
func LooksSecret(name string) bool {
	return secretNameRE.MatchString(name) || strings.HasPrefix(strings.ToUpper(name), "SWITCHYARD_")
}

// OwnSecret reports whether name is one of Switchyard's own secrets: its
// LLM keys and its SWITCHYARD_* settings (the token, the notify URL, the
// database URL). A workflow file never hands them to its nodes (pass_env)
// or MCP servers (${NAME}); only the operator can (serve --pass-env).
func OwnSecret(name string) bool {
	return name == "OPENAI_API_KEY" || name == "ANTHROPIC_API_KEY" || strings.HasPrefix(name, "SWITCHYARD_")
}
