package engine

import (
	"strconv"

	"github.com/switchyard/switchyard/internal/jsonw"
)

// jsonAppender is event data that writes its own JSON: byte for byte what
// json.Marshal writes for it, without reflection. Every step emits a
// step_start and a step_end, so their data is on the hot path of every
// node (TestEventJSONMatchesMarshal keeps the two equal).
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

func (d *stepStartData) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if d.Retry != "" {
		b = append(b, `"retry":`...)
		b = jsonw.AppendString(b, d.Retry)
		b = append(b, ',')
	}
	if d.Reused {
		b = append(b, `"reused":true,`...)
	}
	b = append(b, `"type":`...)
	b = jsonw.AppendString(b, d.Type)
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(d.Visit), 10)
	return append(b, '}')
}

func (d *startPromptData) appendJSON(b []byte) []byte {
	b = append(b, `{"model":`...)
	b = jsonw.AppendString(b, d.Model)
	b = append(b, `,"systemPrompt":`...)
	b = jsonw.AppendString(b, d.SystemPrompt)
	return append(b, '}')
}

func (d *stepEndData) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if d.CancelRun != "" {
		b = append(b, `"cancelRun":`...)
		b = jsonw.AppendString(b, d.CancelRun)
		b = append(b, ',')
	}
	if d.Decided {
		b = append(b, `"decided":true,`...)
	}
	b = append(b, `"durationMs":`...)
	b = strconv.AppendInt(b, d.DurationMs, 10)
	if d.Handle != "" {
		b = append(b, `,"handle":`...)
		b = jsonw.AppendString(b, d.Handle)
	}
	b = append(b, `,"output":`...)
	b = jsonw.AppendString(b, d.Output)
	if d.Rejection != nil {
		b = append(b, `,"rejection":`...)
		b = jsonw.AppendString(b, *d.Rejection)
	}
	b = append(b, `,"status":`...)
	b = jsonw.AppendString(b, string(d.Status))
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(d.Visit), 10)
	return append(b, '}')
}
