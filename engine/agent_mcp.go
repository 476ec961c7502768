package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/mcp"
)

// MCP servers are pooled per run: a server starts when a node of the run
// first needs it and stops when the run's loop lets go of the run (it ends,
// pauses or moves to another process). A paused run holds no server.

// runMCP holds a run's MCP pools, one per configuration (serve
// --mcp-config, a YAML node's mcp: file or inline map).
type runMCP struct {
	mu    sync.Mutex
	pools map[string]*mcp.Pool
}

// mcpPool returns the run's pool for cfg, made on first use. Servers
// start in the run's workspace with the node environment (no server
// secrets); their stderr goes to the run log and their process groups are
// recorded so a takeover after a crash kills what they left.
func (a *agentCall) mcpPool(cfg mcp.Config) (*mcp.Pool, error) {
	r := a.x.r
	r.mcp.mu.Lock()
	defer r.mcp.mu.Unlock()
	key := cfg.Source
	if p := r.mcp.pools[key]; p != nil {
		return p, nil
	}
	env, err := a.toolEnv()
	if err != nil {
		return nil, err
	}
	opts := mcp.Options{
		BaseEnv: env.ProcEnv,
		Dir:     env.Roots[0],
		Expose:  env.Roots,
		Stderr: func(server, line string) {
			r.emit(SystemNodeID, EvOutput, line, map[string]any{"stream": "mcp:" + server})
		},
		OnStart: func(server string, pgid int, start uint64) {
			r.emit(SystemNodeID, EvProcessStart, fmt.Sprintf("mcp server %s started (process group %d)", server, pgid),
				processStart{Group: proc.Group{ID: pgid, Start: start}, Host: hostname()})
		},
	}
	p := mcp.NewPool(cfg, opts)
	if r.mcp.pools == nil {
		r.mcp.pools = map[string]*mcp.Pool{}
	}
	r.mcp.pools[key] = p
	return p, nil
}

// closeMCP stops the run's MCP servers.
func (r *runner) closeMCP() {
	r.mcp.mu.Lock()
	pools := r.mcp.pools
	r.mcp.pools = nil
	r.mcp.mu.Unlock()
	for _, p := range pools {
		if err := p.Close(); err != nil {
			r.e.log.Warn("stop mcp servers", "run", r.run.ID, "err", err)
		}
	}
}

// mcpTools offers the tools of cfg's named servers (all when names is
// nil) that keep allows; a server that cannot start is the node's error.
func (a *agentCall) mcpTools(ctx context.Context, cfg mcp.Config, names []string, keep func(string) bool) ([]*agentTool, error) {
	if len(cfg.Servers) == 0 {
		return nil, nil
	}
	for _, n := range names {
		if _, ok := cfg.Servers[n]; !ok {
			return nil, fmt.Errorf("mcp server %q is not configured (have: %v)", n, cfg.Names())
		}
	}
	pool, err := a.mcpPool(cfg)
	if err != nil {
		return nil, err
	}
	list, err := pool.Tools(ctx, names...)
	if err != nil {
		return nil, err
	}
	var out []*agentTool
	for _, t := range list {
		if keep != nil && !keep(t.QualifiedName) {
			continue
		}
		out = append(out, &agentTool{
			spec: llm.ToolSpec{Name: t.QualifiedName, Description: t.Description, Parameters: t.InputSchema},
			run: func(ctx context.Context, tc llm.ToolCall) toolOutcome {
				args := json.RawMessage(tc.Arguments)
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				res, err := pool.Call(ctx, t.Server, t.Name, args)
				if err != nil {
					return toolOutcome{isError: true, text: "error: " + err.Error()}
				}
				return toolOutcome{text: res.Text, isError: res.IsError, cut: res.Cut}
			},
		})
	}
	return out, nil
}
