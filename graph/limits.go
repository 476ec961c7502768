package graph

import (
	"errors"
	"fmt"
)

// Limits on one graph. They bound what validating (and running) a graph
// can cost: memory grows with nodes and edges, messages with id length.
const (
	MaxNodes    = 10_000
	MaxEdges    = 50_000
	MaxIDLength = 256  // bytes, node and edge ids
	MaxProblems = 100  // problems Validate reports; then one summary
	maxNameLen  = 1024 // bytes, agent names
)

// CodeTooManyProblems is the summary problem that replaces problems past
// MaxProblems.
const CodeTooManyProblems = "too_many_problems"

// ErrTooLarge matches (errors.Is) every *LimitError.
var ErrTooLarge = errors.New("graph over a limit")

// LimitError says which limit a graph is over.
type LimitError struct{ Message string }

func (e *LimitError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// CheckLimits reports the first limit g is over, naming it.
func CheckLimits(g *Graph) error {
	if n := len(g.Nodes); n > MaxNodes {
		return &LimitError{fmt.Sprintf("graph has %d nodes; the limit is %d", n, MaxNodes)}
	}
	if n := len(g.Edges); n > MaxEdges {
		return &LimitError{fmt.Sprintf("graph has %d edges; the limit is %d", n, MaxEdges)}
	}
	for i, n := range g.Nodes {
		if len(n.ID) > MaxIDLength {
			return &LimitError{fmt.Sprintf("node %d: its id is %d bytes; ids may be at most %d", i, len(n.ID), MaxIDLength)}
		}
		if len(n.Data.AgentName) > maxNameLen {
			return &LimitError{fmt.Sprintf("node %q: its agentName is %d bytes; names may be at most %d", n.ID, len(n.Data.AgentName), maxNameLen)}
		}
	}
	for i, e := range g.Edges {
		for _, f := range [...]struct{ name, v string }{
			{"id", e.ID}, {"source", e.Source}, {"target", e.Target},
			{"sourceHandle", e.SourceHandle}, {"targetHandle", e.TargetHandle},
		} {
			if len(f.v) > MaxIDLength {
				return &LimitError{fmt.Sprintf("edge %d: its %s is %d bytes; ids and handles may be at most %d", i, f.name, len(f.v), MaxIDLength)}
			}
		}
	}
	return nil
}

// CapProblems keeps the first MaxProblems problems, errors first, and
// says how many more there were.
func CapProblems(ps []Problem) []Problem {
	if len(ps) <= MaxProblems {
		return ps
	}
	kept := make([]Problem, 0, MaxProblems+1)
	for _, p := range ps {
		if p.IsError() && len(kept) < MaxProblems {
			kept = append(kept, p)
		}
	}
	for _, p := range ps {
		if !p.IsError() && len(kept) < MaxProblems {
			kept = append(kept, p)
		}
	}
	sev := SeverityWarning
	if HasErrors(ps) {
		sev = SeverityError
	}
	return append(kept, Problem{Code: CodeTooManyProblems, Severity: sev,
		Message: fmt.Sprintf("… and %d more problems (at most %d are listed)", len(ps)-MaxProblems, MaxProblems)})
}
