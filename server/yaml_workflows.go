package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/switchyard/switchyard/engine"
	"github.com/switchyard/switchyard/yamldir"
	"github.com/switchyard/switchyard/yamlflow"
)

// YAMLIDPrefix starts the id of every workflow of a YAML folder. Database
// workflows have uuids, so the two never collide.
const YAMLIDPrefix = yamldir.IDPrefix

// YAMLOptions configures NewYAMLWorkflows.
type YAMLOptions = yamldir.Options

// YAMLWorkflows is the WorkflowSource of a folder of YAML workflows (see
// package yamldir): read-only workflows listed beside drawn ones.
type YAMLWorkflows struct {
	f *yamldir.Folder
	// editable says whether the server saves the files (PUT, POST
	// /api/workflows/yaml); set when the server's routes are built.
	editable atomic.Bool
	// served are the texts given out by GET and saves, for 409 answers.
	served servedTexts
	// positions keeps where the canvas shows each file's nodes.
	positions *yamlPositions
}

// NewYAMLWorkflows serves the YAML workflows of dir. A folder that does
// not exist (yet) lists nothing; a path that is not a folder is an error.
func NewYAMLWorkflows(dir string, o YAMLOptions) (*YAMLWorkflows, error) {
	f, err := yamldir.New(dir, o)
	if err != nil {
		return nil, err
	}
	return &YAMLWorkflows{f: f, positions: newYAMLPositions("")}, nil
}

// YAMLWorkflowID is the id of the workflow file at rel (see
// yamldir.WorkflowID).
func YAMLWorkflowID(rel string) string { return yamldir.WorkflowID(rel) }

// Dir is the folder's absolute path.
func (y *YAMLWorkflows) Dir() string { return y.f.Dir() }

func yamlWorkflow(w yamldir.Workflow) Workflow {
	return Workflow{ID: w.ID, Name: w.Name, Description: w.Description, Kind: engine.KindYAML, Version: 1,
		Graph: w.Graph, Source: w.Source, Path: w.Path, ReadOnly: true, Problems: w.Problems, RunBlocker: w.RunBlocker,
		CreatedAt: w.ModTime, UpdatedAt: w.ModTime}
}

// ListWorkflows implements WorkflowSource. A listed workflow carries the
// errors that keep it from running (warnings only come with GET).
func (y *YAMLWorkflows) ListWorkflows(ctx context.Context) ([]Workflow, error) {
	ws, err := y.f.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Workflow, len(ws))
	for i, w := range ws {
		out[i] = yamlWorkflow(w)
	}
	return out, nil
}

// GetWorkflow implements WorkflowGetter: the file's source, its graph
// projection and every loader problem (file:line in the messages).
func (y *YAMLWorkflows) GetWorkflow(ctx context.Context, id string) (*Workflow, error) {
	w, err := y.f.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	out := yamlWorkflow(*w)
	out.SourceHash = y.served.put([]byte(w.Source))
	out.Editable = y.editable.Load()
	return &out, nil
}

// StartWorkflow implements WorkflowStarter: it starts the file as it is
// now. A file with errors does not start (400 with its problems).
func (y *YAMLWorkflows) StartWorkflow(ctx context.Context, e *engine.Engine, id string, opt engine.StartOptions) (*engine.Run, error) {
	r, err := y.f.Start(ctx, e, id, opt)
	var inv *yamldir.InvalidError
	if errors.As(err, &inv) {
		return nil, &apiError{Status: http.StatusBadRequest, Code: CodeInvalidGraph, Message: inv.Error(), Problems: inv.Problems}
	}
	return r, err
}

// OwnsWorkflowID reports whether id has the form of this source's ids,
// whether or not its file still exists (its runs still do).
func (y *YAMLWorkflows) OwnsWorkflowID(id string) bool { return y.f.OwnsID(id) }

// WorkflowIDOfRun returns the id of the folder's workflow a YAML run was
// started from; "" for other runs.
func (y *YAMLWorkflows) WorkflowIDOfRun(r *engine.Run) string { return y.f.WorkflowIDOfRun(r) }

// yamlRunGraphs caches the projections of YAML run definitions by source
// text: a run's definition never changes and GET /api/runs/{id} is polled.
type yamlRunGraphs struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]json.RawMessage
}

const yamlRunGraphCache = 256

var runGraphs = &yamlRunGraphs{m: map[[sha256.Size]byte]json.RawMessage{}}

// yamlRunGraph projects the workflow a YAML run's definition snapshot
// holds; nil if it holds none.
func yamlRunGraph(def json.RawMessage) json.RawMessage {
	var snap struct {
		File     string                      `json:"file"`
		Source   string                      `json:"source"`
		Includes []yamlflow.IncludedWorkflow `json:"includes"`
	}
	if json.Unmarshal(def, &snap) != nil {
		_, snap.Source = splitDefinition("yaml", def) // a bare source string
	}
	src := snap.Source
	if src == "" {
		return nil
	}
	key := sha256.Sum256(def)
	runGraphs.mu.Lock()
	g, ok := runGraphs.m[key]
	runGraphs.mu.Unlock()
	if ok {
		return g
	}
	// The blocks its include: nodes inlined are part of the snapshot.
	wf, _, _ := yamlflow.Parse(snap.File, []byte(src), yamlflow.WithIncludeResolver(yamlflow.SnapshotIncludeResolver(snap.Includes)))
	if wf == nil {
		return nil
	}
	g = yamlflow.CanvasJSON(wf)
	runGraphs.mu.Lock()
	if len(runGraphs.m) >= yamlRunGraphCache {
		for k := range runGraphs.m { // drop any one: good enough for a small cache
			delete(runGraphs.m, k)
			break
		}
	}
	runGraphs.m[key] = g
	runGraphs.mu.Unlock()
	return g
}
