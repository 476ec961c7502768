package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchyard/switchyard/engine/tools"
	"github.com/switchyard/switchyard/mcp"
)

// yamlToolPolicy reads an AI node's tools as Archon means them: no
// allowed_tools offers every built-in tool, allowed_tools: [] none, a list
// those named; denied_tools removes names (globs too); approve_tools makes
// matching calls wait for a reviewer; max_turns caps the loop.
func yamlToolPolicy(spec *yamlSpec) toolPolicy {
	n := spec.n
	var p toolPolicy
	for _, name := range tools.Names() {
		if n.ToolEnabled(name) {
			p.builtins = append(p.builtins, name)
		}
	}
	p.approve = n.ApproveTools
	p.deny = n.DeniedCalls
	p.maxTurns = n.MaxTurns
	return p
}

// mutates reports whether the policy offers a tool that writes or runs code.
func (p toolPolicy) mutates() bool {
	for _, n := range p.builtins {
		if tools.Mutating(n) {
			return true
		}
	}
	return false
}

// yamlMCPTools offers the tools of the node's mcp: servers that its
// allowed_tools/denied_tools let through. A file is looked up in the
// workflow's folder, then in the run's working directory (Archon keeps
// them under .archon/mcp/ of the repository).
func (a *agentCall) yamlMCPTools(ctx context.Context, spec *yamlSpec) ([]*agentTool, error) {
	n := spec.n
	if n.MCP == nil {
		return nil, nil
	}
	cfg, err := yamlMCPConfig(spec, a.x.WorkDir())
	if err != nil {
		return nil, fmt.Errorf("node %q: mcp: %w", n.ID, err)
	}
	ts, err := a.mcpTools(ctx, cfg, nil, n.ToolEnabled)
	if err != nil {
		return nil, fmt.Errorf("node %q: %w", n.ID, err)
	}
	return ts, nil
}

func yamlMCPConfig(spec *yamlSpec, workDir string) (mcp.Config, error) {
	m := spec.n.MCP
	if m.File != "" {
		path := m.File
		if !filepath.IsAbs(path) {
			cands := []string{}
			if spec.rs.wf.Dir != "" {
				cands = append(cands, filepath.Join(spec.rs.wf.Dir, path))
			}
			if workDir != "" {
				cands = append(cands, filepath.Join(workDir, path))
			}
			path = ""
			for _, c := range cands {
				if _, err := os.Stat(c); err == nil {
					path = c
					break
				}
			}
			if path == "" {
				return mcp.Config{}, fmt.Errorf("file %q not found (looked in %v)", m.File, cands)
			}
		}
		return mcp.LoadConfigFile(path)
	}
	raw, err := json.Marshal(m.Raw)
	if err != nil {
		return mcp.Config{}, err
	}
	return mcp.ParseConfig(raw, fmt.Sprintf("%s: node %q mcp", spec.rs.wf.File, spec.n.ID))
}
