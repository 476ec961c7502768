package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/switchyard/switchyard/internal/proc"
	"github.com/switchyard/switchyard/llm"
	"github.com/switchyard/switchyard/yamlflow"
)

// Each YAML node kind has its executor in its own file (yaml_prompt.go,
// yaml_bash.go, yaml_script.go, yaml_loop.go, yaml_approval.go,
// yaml_cancel.go), registered in kinds.go. What every YAML node does
// around its kind's work is here: take the checkout when it may change it,
// check `when:`, retry under the node's policy, write output_type
// artifacts.

// runYAML runs a YAML node's body with the steps every kind shares.
func runYAML(ctx context.Context, x *Exec, body func(ctx context.Context, spec *yamlSpec) (Result, error)) (Result, error) {
	spec := x.Spec().(*yamlSpec)
	if err := holdIfMutating(ctx, x, spec); err != nil {
		return Result{}, err
	}
	if err := checkWhen(x, spec); err != nil {
		return Result{}, err
	}
	res, err := body(ctx, spec)
	return finishNode(x, spec, res, err)
}

// resumeYAML continues a YAML node that waited for a human (its when:
// held when it first ran).
func resumeYAML(ctx context.Context, x *Exec, body func(ctx context.Context, spec *yamlSpec) (Result, error)) (Result, error) {
	spec := x.Spec().(*yamlSpec)
	if err := holdIfMutating(ctx, x, spec); err != nil {
		return Result{}, err
	}
	res, err := body(ctx, spec)
	return finishNode(x, spec, res, err)
}

// holdIfMutating takes the working directory (mutates_checkout) before a
// node that runs processes in it or may change it: bash, script,
// until_bash, and AI nodes offered a tool that writes or runs code.
func holdIfMutating(ctx context.Context, x *Exec, spec *yamlSpec) error {
	n := spec.n
	switch {
	case n.Kind == yamlflow.KindBash, n.Kind == yamlflow.KindScript,
		n.Kind == yamlflow.KindLoop && n.Loop != nil && n.Loop.UntilBash != "",
		n.IsAI() && yamlToolPolicy(spec).mutates():
		return spec.rs.holdCheckout(ctx, x)
	}
	return nil
}

// finishNode writes output_type artifacts of a node that completed.
func finishNode(x *Exec, spec *yamlSpec, res Result, err error) (Result, error) {
	if err != nil || res.Wait != nil || spec.n.OutputType == "" {
		return res, err
	}
	dir, derr := x.ArtifactsDir()
	if derr == nil {
		dir = filepath.Join(dir, "nodes")
		derr = os.MkdirAll(dir, 0o755)
	}
	if derr == nil {
		derr = os.WriteFile(filepath.Join(dir, spec.n.ID+".md"), []byte(res.Output), 0o644)
	}
	if derr != nil {
		x.Emit(EvWarning, "cannot write output_type artifact: "+derr.Error(), nil)
	}
	return res, nil
}

// withRetry runs fn under the node's retry policy: up to max_attempts
// retries after the first failure (as in Archon), delay_ms doubling each
// time. on_error "transient" retries only transient LLM errors and
// processes killed by a timeout or a signal; "all" retries any failure
// except permanent ones (configuration and reference errors).
func withRetry(ctx context.Context, x *Exec, n *yamlflow.Node, fn func(context.Context) (Result, error)) (Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := fn(ctx)
		if err == nil || ctx.Err() != nil || n.Retry == nil || attempt >= n.Retry.MaxAttempts || !retryable(n.Retry.OnError, err) {
			return res, err
		}
		unit := time.Millisecond
		if spec, ok := x.Spec().(*yamlSpec); ok && spec.rs.cfg.retryUnit > 0 {
			unit = spec.rs.cfg.retryUnit
		}
		delay := time.Duration(n.Retry.DelayMS) * unit << attempt
		if delay > 5*time.Minute || delay < 0 {
			delay = 5 * time.Minute
		}
		x.Emit(EvWarning, fmt.Sprintf("%s failed: %v; retry %d of %d in %s", n.ID, err, attempt+1, n.Retry.MaxAttempts, delay),
			map[string]any{"retry": attempt + 1, "maxAttempts": n.Retry.MaxAttempts, "delayMs": delay.Milliseconds()})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, ctx.Err()
		case <-t.C:
		}
	}
}

func retryable(onError string, err error) bool {
	var pe *permanentError
	if errors.As(err, &pe) {
		return false
	}
	if onError == yamlflow.RetryOnAll {
		return true
	}
	var le *llm.CallError
	if errors.As(err, &le) {
		return le.Transient
	}
	var proc *proc.Error
	if errors.As(err, &proc) {
		return proc.Transient()
	}
	return false
}
