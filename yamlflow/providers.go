package yamlflow

import (
	"fmt"
	"sort"
	"strings"
)

// Providers of AI nodes. Switchyard ships the OpenAI-compatible provider
// and Claude (through Anthropic's OpenAI-compatible endpoint; "anthropic"
// names it too); workflows
// written for Archon's other providers load, with a warning, but cannot
// run.
const (
	ProviderOpenAI = "openai"
	ProviderClaude = "claude"
)

// unshippedProviders are providers Archon workflows name that Switchyard
// does not ship.
var unshippedProviders = map[string]bool{"pi": true, "codex": true, "copilot": true}

// Shipped reports whether Switchyard can run nodes of provider p ("" is
// the default, OpenAI-compatible provider).
func Shipped(p string) bool {
	switch strings.ToLower(p) {
	case "", ProviderOpenAI, ProviderClaude, "anthropic":
		return true
	}
	return false
}

// claudeAliases are the model names Archon's Claude provider takes, and
// the Anthropic model each stands for.
var claudeAliases = map[string]string{
	"haiku": "claude-haiku-4-5", "sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-1",
	"small": "claude-haiku-4-5", "medium": "claude-sonnet-4-5", "large": "claude-opus-4-1",
}

// ProviderFor is the provider of an AI node: its own, else the workflow's,
// else Claude for a Claude model name (claude-*, anthropic/*, haiku,
// sonnet, opus), else the default ("").
func ProviderFor(wf *Workflow, n *Node) string {
	p := strings.ToLower(strings.TrimSpace(n.Provider))
	if p == "" {
		p = strings.ToLower(strings.TrimSpace(wf.Provider))
	}
	if p == "anthropic" {
		return ProviderClaude
	}
	if p != "" {
		return p
	}
	m := strings.ToLower(n.Model)
	if m == "" {
		m = strings.ToLower(wf.Model)
	}
	switch m {
	case "haiku", "sonnet", "opus":
		return ProviderClaude
	}
	if strings.HasPrefix(m, "claude") || strings.HasPrefix(m, "anthropic/") {
		return ProviderClaude
	}
	return ""
}

// ClaudeModel maps a node's model name to Anthropic's: aliases to model
// ids, "anthropic/" dropped; "" stays "" (the provider's default).
func ClaudeModel(m string) string {
	m = strings.TrimSpace(m)
	if id, ok := claudeAliases[strings.ToLower(m)]; ok {
		return id
	}
	return strings.TrimPrefix(m, "anthropic/")
}

// checkProvider reports a provider nobody knows (an error, with a
// did-you-mean) and one Switchyard does not ship (a warning: the workflow
// loads but cannot run).
func (p *parser) checkProvider(line int, nodeID, value string) {
	v := strings.ToLower(strings.TrimSpace(value))
	if v == "" || Shipped(v) {
		return
	}
	if unshippedProviders[v] {
		p.warnf(line, nodeID, "provider", CodeUnsupportedProvider,
			"provider %q is not shipped with Switchyard (it runs %q and %q): the workflow loads but cannot run", value, ProviderOpenAI, ProviderClaude)
		return
	}
	known := []string{ProviderOpenAI, ProviderClaude}
	for k := range unshippedProviders {
		known = append(known, k)
	}
	sort.Strings(known)
	msg := fmt.Sprintf("unknown provider %q (known: %s)", value, strings.Join(known, ", "))
	if s := suggest(v, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	p.errorf(line, nodeID, "provider", CodeUnknownProvider, "%s", msg)
}
