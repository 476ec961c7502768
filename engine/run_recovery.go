package engine

import (
	"encoding/json"
)

// logged is a node completion found in the event log but not in the node
// states: the process died between the two writes. The log wins.
type logged struct {
	idx int
	res Result
}

// stepRecord is what the event log says about a node's latest visit.
type stepRecord struct {
	started   int         // visit of the last step_start
	starts    map[int]int // step_starts per visit: the attempts made
	completed map[int]stepEnd
}

type stepEnd struct {
	Status    NodeStatus `json:"status"`
	Output    string     `json:"output"`
	Handle    string     `json:"handle"`
	Visit     int        `json:"visit"`
	Decided   bool       `json:"decided"`
	Rejection string     `json:"rejection"`
}

// readLog summarizes step_start/step_end events per node.
func readLog(evs []Event) map[string]*stepRecord {
	out := map[string]*stepRecord{}
	for _, ev := range evs {
		if ev.Type != EvStepStart && ev.Type != EvStepEnd {
			continue
		}
		rec := out[ev.NodeID]
		if rec == nil {
			rec = &stepRecord{starts: map[int]int{}, completed: map[int]stepEnd{}}
			out[ev.NodeID] = rec
		}
		var d stepEnd
		_ = json.Unmarshal(ev.Data, &d)
		if ev.Type == EvStepStart {
			rec.started = d.Visit
			rec.starts[d.Visit]++
		} else if d.Status == NodeCompleted && d.Visit > 0 {
			rec.completed[d.Visit] = d
		}
	}
	return out
}
