package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchyard/switchyard/internal/proc"
)

// runProc runs one subprocess of a bash or script node (see internal/proc),
// streaming its output as output events of x (none when x is nil). A
// missing executable or oversized output will not get better on a retry.
func runProc(ctx context.Context, x *Exec, ps proc.Spec) (string, string, error) {
	if x != nil {
		ps.Output = func(stream, text string, cut bool) {
			x.Emit(EvOutput, text, map[string]any{"stream": stream})
			if cut {
				x.Emit(EvWarning, fmt.Sprintf("output beyond %d KiB is not streamed to the log (the node's output keeps all of stdout)",
					proc.MaxStreamed>>10), nil)
			}
		}
	}
	out, errText, err := proc.Run(ctx, ps)
	if errors.Is(err, proc.ErrNotFound) || errors.Is(err, proc.ErrOutputTooLarge) {
		err = permanent(err)
	}
	return out, errText, err
}
