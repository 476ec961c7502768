package commit

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// NormTime is t as every store reads it back: UTC, whole microseconds.
func NormTime(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

// NormTimePtr is NormTime of *t, nil for nil.
func NormTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := NormTime(*t)
	return &n
}

// CloneRun copies r deeply enough that the caller may modify r afterwards,
// with times normalized as they will read back. Definition is shared: it is
// an immutable snapshot.
func CloneRun(r *engine.Run) *engine.Run {
	c := *r
	c.PendingApprovals = slices.Clone(r.PendingApprovals)
	for i := range c.PendingApprovals {
		c.PendingApprovals[i].Since = NormTime(c.PendingApprovals[i].Since)
	}
	c.CreatedAt = NormTime(r.CreatedAt)
	c.UpdatedAt = NormTime(r.UpdatedAt)
	c.FinishedAt = NormTimePtr(r.FinishedAt)
	if r.Usage.CostUSD != nil {
		f := *r.Usage.CostUSD
		c.Usage.CostUSD = &f
	}
	return &c
}

// CopyEvents copies events as a store keeps them: RunID set to runID, data
// copied, times normalized.
func CopyEvents(runID string, events []*engine.Event) []engine.Event {
	evs := make([]engine.Event, len(events))
	for i, ev := range events {
		evs[i] = *ev
		evs[i].RunID = runID
		evs[i].Data = slices.Clone(ev.Data)
		evs[i].Timestamp = NormTime(ev.Timestamp)
	}
	return evs
}

// ApprovalsJSON is json.Marshal(pa), the runs row's pending_approvals,
// without encoding/json for the usual none: nearly every checkpoint has
// none, and marshaling an empty slice was half a percent of the server's
// CPU a run. The bytes of an empty pa are shared: read-only.
func ApprovalsJSON(pa []engine.PendingApproval) ([]byte, error) {
	switch {
	case pa == nil:
		return jsonNull, nil
	case len(pa) == 0:
		return jsonEmptyArray, nil
	}
	return json.Marshal(pa)
}

var jsonNull, jsonEmptyArray = []byte("null"), []byte("[]")
