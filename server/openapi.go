package server

import (
	"encoding/json"
)

// The OpenAPI 3.1 document of the API (GET /api/openapi.json). Its schemas
// are JSON Schema 2020-12; the tests check every echo route against it
// (and back) and validate real responses against its schemas.

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

func arrayOf(s obj) obj { return obj{"type": "array", "items": s} }

func str() obj { return obj{"type": "string"} }

func nullable(typ string) obj { return obj{"type": []string{typ, "null"}} }

func dateTime() obj { return obj{"type": "string", "format": "date-time"} }

func object(required []string, props obj) obj {
	o := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func jsonContent(schema obj) obj {
	return obj{"application/json": obj{"schema": schema}}
}

func resp(desc string, schema obj) obj {
	return obj{"description": desc, "content": jsonContent(schema)}
}

// withHeaders documents a response's headers.
func withHeaders(r obj, headers obj) obj {
	r["headers"] = headers
	return r
}

func errResp(desc string) obj { return resp(desc, ref("Error")) }

func body(schema obj) obj {
	return obj{"required": true, "content": jsonContent(schema)}
}

func pathParam(name, desc string) obj {
	return obj{"name": name, "in": "path", "required": true, "description": desc, "schema": str()}
}

func queryParam(name, desc string, schema obj) obj {
	return obj{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
}

type operation struct {
	id, summary string
	params      []obj
	body        obj
	responses   obj
}

func (o operation) build() obj {
	out := obj{"operationId": o.id, "summary": o.summary, "responses": o.responses}
	if len(o.params) > 0 {
		out["parameters"] = o.params
	}
	if o.body != nil {
		out["requestBody"] = o.body
	}
	return out
}

var (
	runIDParamDoc      = pathParam("id", "Run id (a uuid).")
	workflowIDParamDoc = pathParam("id", "Workflow id.")
	afterParamDoc      = queryParam("after", "Only events with a greater seq.", obj{"type": "integer", "minimum": 0})
)

// public marks an operation that needs no token.
func public(op obj) obj {
	op["security"] = []obj{}
	return op
}

// closed forbids properties not listed and describes the schema.
func closed(o obj, desc ...string) obj {
	o["additionalProperties"] = false
	if len(desc) > 0 {
		o["description"] = desc[0]
	}
	return o
}

// withCompatErrors is withErrors for the compatibility routes, whose errors
// have AgentFlow's shape (CompatError).
func withCompatErrors(r obj, codes ...string) obj {
	r = withErrors(r, codes...)
	for code, v := range r {
		if code[0] >= '4' {
			r[code] = resp(v.(obj)["description"].(string), ref("CompatError"))
		}
	}
	return r
}

// withErrors adds the error responses every API route may give.
func withErrors(r obj, codes ...string) obj {
	descs := map[string]string{
		"400": "Bad request: malformed JSON (with line and column), invalid ids or parameters.",
		"401": "Authentication required (a token is configured).",
		"403": "Cross-origin request or foreign Host header.",
		"404": "Not found.",
		"409": "Conflict.",
		"413": "Request body too large, a graph or YAML workflow over a limit (10,000 nodes, 50,000 edges or dependencies, ids of 256 bytes; YAML text of 4 MiB), or too many edits: the message names it.",
		"408": "The request body did not arrive within the read timeout (serve --read-timeout).",
		"503": "Unavailable (no LLM configured, shutting down, or too many graphs being decoded at once: try again).",
	}
	r["401"] = errResp(descs["401"])
	r["403"] = errResp(descs["403"])
	if _, ok := r["429"]; !ok {
		r["429"] = errResp("Too many failed sign-in attempts from this address (wrong bearer tokens count): Retry-After says when to try again.")
	}
	for _, c := range codes {
		r[c] = errResp(descs[c])
		if c == "413" { // a route that reads a body may time out reading it
			r["408"] = errResp(descs["408"])
		}
	}
	return r
}

func schemas() obj {
	problem := object([]string{"code", "severity", "message"}, obj{
		"code": str(), "severity": obj{"enum": []string{"error", "warning"}}, "message": str(),
		"nodeId": str(), "edgeId": str(),
		"field": obj{"type": "string", "description": "YAML workflows: the dotted field path inside the node or file"},
		"line":  obj{"type": "integer", "description": "YAML workflows: the 1-based line"},
	})
	status := obj{"enum": []string{"pending", "running", "paused", "completed", "failed", "cancelled", "interrupted"}}
	toolApproval := object([]string{"callId", "tool", "arguments"}, obj{
		"callId": str(), "tool": obj{"type": "string", "description": "The tool the agent called: Read, Write, Edit, Glob, Grep, Bash, LS, mcp__<server>__<tool>, or a subagent."},
		"arguments": obj{"description": "The call's arguments as the model sent them (a JSON object; long strings cut)."},
		"diff":      obj{"type": "string", "description": "Write and Edit: what the call would change, as a unified diff."},
	})
	pending := object([]string{"nodeId", "prompt", "input", "since"}, obj{
		"nodeId": str(), "prompt": str(), "input": str(), "since": dateTime(),
		"tool": ref("ToolApproval"),
	})
	summaryProps := obj{
		"runId": str(), "workflowId": str(), "kind": str(), "status": ref("RunStatus"), "input": str(),
		"waitingForInput": obj{"type": "boolean"}, "currentNodeId": str(),
		"pendingApprovals": arrayOf(ref("PendingApproval")), "error": str(),
		"createdAt": dateTime(), "updatedAt": dateTime(), "finishedAt": dateTime(),
		"usage":  ref("Usage"),
		"forkOf": obj{"type": "object", "required": []string{"runId", "nodeId"}, "properties": obj{"runId": str(), "nodeId": str()}, "description": "The run this one was forked from (POST /api/runs/{id}/fork) and the node it ran from."},
	}
	summaryReq := []string{"runId", "kind", "status", "input", "waitingForInput", "pendingApprovals", "createdAt", "updatedAt", "usage"}
	tokens := func(d string) obj { return obj{"type": "integer", "minimum": 0, "description": d} }
	usage := obj{"type": "object", "required": []string{"promptTokens", "completionTokens", "totalTokens"},
		"description": "Model tokens as the provider reported them. On a run: every model call it made (tool-call rounds, subagents, and calls of nodes that failed later included), kept up to date while it runs.",
		"properties": obj{
			"promptTokens": tokens("Input tokens."), "completionTokens": tokens("Output tokens."),
			"totalTokens": tokens("promptTokens + completionTokens, as the provider counts them."),
			"costUsd": obj{"type": "number", "minimum": 0,
				"description": "US dollars, when the server has a price table (SWITCHYARD_PRICES) with a price for at least one of the models used; models without a price add nothing."},
		}}
	workflowRunProps := obj{
		"outputs": obj{"type": "object", "additionalProperties": str(), "description": "Each completed node's output, by node id."},
		"done":    obj{"type": "boolean", "description": "The run ended or paused within the wait."},
	}
	for k, v := range summaryProps {
		workflowRunProps[k] = v
	}
	detailProps := obj{}
	for k, v := range summaryProps {
		detailProps[k] = v
	}
	detailProps["outputs"] = obj{"type": "object", "additionalProperties": str()}
	detailProps["graph"] = ref("Graph")
	detailProps["source"] = str()
	detailProps["nodes"] = arrayOf(ref("NodeState"))
	detailProps["workDir"] = obj{"type": "string", "description": "The folder the run works in: its working directory, workspace or git worktree."}
	detailProps["branch"] = obj{"type": "string", "description": "The branch of the git worktree the run got (worktree: {enabled: true}): switchyard/<run id>."}
	workflowProps := obj{
		"id": str(), "name": str(), "description": str(), "kind": obj{"enum": []string{"graph", "yaml"}},
		"version": obj{"type": "integer"}, "graph": ref("Graph"), "source": str(), "path": str(),
		"readOnly": obj{"type": "boolean"}, "createdAt": dateTime(), "updatedAt": dateTime(),
		"sourceHash": obj{"type": "string", "description": "YAML workflows (GET, saves): the hex SHA-256 of source, the baseHash of the next save."},
		"editable":   obj{"type": "boolean", "description": "YAML workflows (GET, saves): the server saves this file (PUT with source or edits); absent under serve --read-only-workflows."},
		"runBlocker": obj{"type": "string", "description": "YAML workflows: why the workflow cannot run here (its errors, a provider that is not configured or not shipped); absent if it can."},
		"problems": obj{"type": "array", "items": ref("Problem"),
			"description": "YAML workflows: loader problems (file:line in messages); lists carry only the errors, which keep the file from running."},
	}
	workflowReq := []string{"id", "name", "description", "kind", "version", "createdAt", "updatedAt"}
	savedProps := obj{"problems": arrayOf(ref("Problem"))}
	for k, v := range workflowProps {
		savedProps[k] = v
	}
	compatLog := object([]string{"timestamp", "nodeId", "type", "content"}, obj{
		"timestamp": dateTime(), "nodeId": str(), "type": str(), "content": str(),
	})
	return obj{
		"Error": object([]string{"error"}, obj{"error": object([]string{"code", "message"}, obj{
			"code":    obj{"type": "string", "description": "bad_request, not_found, conflict, invalid_graph, invalid_edit, invalid_decision, unauthorized, forbidden, payload_too_large, no_llm, method_not_allowed, unavailable, disk_full, internal"},
			"message": str(), "problems": arrayOf(ref("Problem")),
		})}),
		"Problem":   problem,
		"RunStatus": status,
		"Graph": obj{"type": "object", "description": "A graph in the current (React Flow) shape. YAML workflows and runs give a read-only projection: nodes of type \"yaml\" with data {label, kind (command, prompt, bash, script, loop, approval, cancel), detail, when?, triggerRule?, gate?, alwaysRun?}, laid out in layers, and an edge per depends_on entry.",
			"required": []string{"nodes", "edges"}, "properties": obj{
				"nodes": obj{"type": []string{"array", "null"}, "items": object([]string{"id", "type", "position", "data"}, obj{
					"id": str(), "type": str(), "position": object([]string{"x", "y"}, obj{"x": obj{"type": "number"}, "y": obj{"type": "number"}}),
					"data": obj{"type": "object"},
				})},
				"edges": obj{"type": []string{"array", "null"}, "items": object([]string{"id", "source", "target"}, obj{
					"id": str(), "source": str(), "target": str(), "sourceHandle": str(), "targetHandle": str(),
				})},
			}},
		"GraphInput":    obj{"type": "object", "description": "A graph in the current shape or the legacy one (x/y on nodes, connections, input nodes); it is normalized."},
		"Workflow":      object(workflowReq, workflowProps),
		"SavedWorkflow": object(append([]string{"problems"}, workflowReq...), savedProps),
		"WorkflowVersion": object([]string{"workflowId", "version", "name", "description", "kind", "createdAt"}, obj{
			"workflowId": str(), "version": obj{"type": "integer"}, "name": str(), "description": str(),
			"kind": str(), "graph": ref("Graph"), "source": str(), "createdAt": dateTime(),
		}),
		"WorkflowWrite": object(nil, obj{
			"name": str(), "description": str(), "kind": obj{"enum": []string{"graph"}},
			"graph": ref("GraphInput"), "version": obj{"type": "integer", "description": "PUT: the version you edited (required)."},
		}),
		"PendingApproval": pending,
		"ToolApproval":    toolApproval,
		"Approval": object([]string{"runId", "nodeId", "workflowName", "kind", "prompt", "input", "runInput", "since"}, obj{
			"runId": str(), "nodeId": str(), "workflowId": str(),
			"workflowName": obj{"type": "string", "description": "The workflow's name; for a run of an unsaved graph, \"Unsaved workflow\"."},
			"kind":         obj{"enum": []string{"graph", "yaml"}},
			"prompt":       str(), "input": obj{"type": "string", "description": "The output waiting for approval."},
			"runInput": obj{"type": "string", "description": "The run's input."}, "since": dateTime(),
			"tool": ref("ToolApproval"),
		}),
		"Usage": usage,
		"LLMResponseData": obj{"type": "object", "required": []string{"model"},
			"description": "The data of an llm_response event (an agent node's or a YAML prompt node's answer). usage covers every model call behind the answer (its tool-call rounds and its subagents' calls) and is absent when the provider reported none; a node's usage is the sum over its llm_response events.",
			"properties": obj{
				"model": str(),
				"usage": ref("Usage"),
			}},
		"SubagentCallData": obj{"type": "object",
			"description": "The data of subagent_call_end and subagent_call_error events (the call itself is the event's content, JSON). usage covers that subagent call's model calls, its own subagents' included (already counted in the calling node's llm_response); absent when none was reported.",
			"properties":  obj{"usage": ref("Usage")}},
		"RunSummary": object(summaryReq, summaryProps),
		"Run":        object(append([]string{"outputs", "nodes"}, summaryReq...), detailProps),
		"NodeState": object([]string{"nodeId", "status", "visits", "attempts"}, obj{
			"nodeId": str(), "status": obj{"enum": []string{"idle", "pending", "queued", "running", "waiting", "completed", "failed", "skipped"}},
			"input": str(), "output": str(), "handle": str(), "error": str(),
			"visits": obj{"type": "integer"}, "attempts": obj{"type": "integer"},
			"startedAt": dateTime(), "finishedAt": dateTime(),
		}),
		"Event": object([]string{"seq", "runId", "nodeId", "type", "content", "timestamp"}, obj{
			"seq": obj{"type": "integer"}, "runId": str(), "nodeId": str(), "type": str(), "content": str(),
			"timestamp": dateTime(), "data": obj{"description": "Type-specific; llm_response: LLMResponseData; subagent_call_end and subagent_call_error: SubagentCallData."},
		}),
		"StatusMessage": object([]string{"runId", "status", "waitingForInput"}, obj{
			"runId": str(), "status": ref("RunStatus"), "workflowId": str(), "waitingForInput": obj{"type": "boolean"},
		}),
		"WorkflowChangedMessage": closed(object([]string{"type", "id", "path"}, obj{
			"type":    obj{"enum": []string{MsgWorkflowChanged}},
			"id":      obj{"type": "string", "description": "The YAML workflow's id."},
			"path":    obj{"type": "string", "description": "Its file in the workflows folder."},
			"hash":    obj{"type": "string", "description": "The hex SHA-256 of its text now (sourceHash of GET /api/workflows/{id}); absent when deleted."},
			"deleted": obj{"type": "boolean", "description": "The file is gone."},
		}), "A message of GET /api/ws: a YAML workflow file was created, changed or deleted, on disk or by a write through the API (sent once per change; an editor whose text has this hash wrote it itself)."),
		"RunWorkflow": object(nil, obj{
			"input": obj{"type": "string", "description": "The run's input ($ARGUMENTS)."},
			"wait": obj{"description": "How long to wait for the run to end or pause: a number of seconds, or a duration such as \"90s\" (at most 10 minutes). Absent or 0: answer at once.",
				"oneOf": []obj{{"type": "number", "minimum": 0}, {"type": "string"}}},
		}),
		"WorkflowRunResult": object(append([]string{"outputs", "done"}, summaryReq...), workflowRunProps),
		"ForkRun": object([]string{"nodeId"}, obj{
			"nodeId": obj{"type": "string", "description": "The node to run from: it and everything after it run again."},
			"pinned": obj{"type": "object", "additionalProperties": str(), "description": "Edited outputs of nodes upstream of nodeId, by node id (pinned data)."},
			"input":  obj{"type": "string", "description": "The new run's input; the parent's when absent."},
		}),
		"CreateRun": object(nil, obj{
			"workflowId": str(), "graph": ref("GraphInput"), "input": str(),
		}),
		"Decision": object([]string{"decision"}, obj{
			"decision": obj{"type": "string", "description": "approve or reject"}, "note": str(),
		}),
		"GraphRequest": object([]string{"graph"}, obj{"graph": ref("GraphInput")}),
		"YAMLEdit": closed(object([]string{"op"}, obj{
			"op":         obj{"enum": []string{"set", "unset", "addNode", "deleteNode", "addDependency", "removeDependency", "renameNode"}},
			"node":       obj{"type": "string", "description": "The node's id; set/unset with \"\" change the top level (name, description, model, ...); addNode: the new id."},
			"field":      obj{"type": "string", "description": "set/unset: a dotted field path inside the node: prompt, bash, script, command, when, trigger_rule, timeout, model, provider, retry.max_attempts, retry.delay_ms, loop.until, approval.message, approval.on_reject.prompt, ..."},
			"value":      obj{"description": "set: the new JSON value (null removes the field); addNode: the body of the kind (a string for command, prompt, bash, script and cancel, an object for loop and approval; default a placeholder)."},
			"kind":       obj{"enum": []string{"command", "prompt", "bash", "script", "loop", "approval", "cancel"}, "description": "addNode: the kind."},
			"dependsOn":  arrayOf(str()),
			"dependency": obj{"type": "string", "description": "addDependency/removeDependency: the id of the node `node` waits for (an edge dependency -> node)."},
			"newId":      obj{"type": "string", "description": "renameNode: the new id (depends_on entries follow; $id.output references in texts do not)."},
			"after":      obj{"type": "string", "description": "set of a field the mapping does not have yet: the key it goes right after (default: the end; top-level fields before nodes:); ignored when the field exists."},
		}), "One change of a YAML workflow file, applied in place: only the changed lines of the file change (comments, order, quoting and blank lines stay)."),
		"YAMLSave": closed(object([]string{"baseHash"}, obj{
			"source":   obj{"type": "string", "description": "The whole new text, saved as given."},
			"edits":    arrayOf(ref("YAMLEdit")),
			"baseHash": obj{"type": "string", "description": "sourceHash of the text the editor started from; another hash gets 409."},
		}), "PUT /api/workflows/{id} for a YAML workflow: source or edits (not both)."),
		"WorkflowSave": obj{"description": "A drawn workflow's next version (WorkflowWrite) or, for a YAML workflow (id yaml.*), YAMLSave.",
			"anyOf": []obj{ref("WorkflowWrite"), ref("YAMLSave")}},
		"YAMLConflict": object([]string{"error", "disk", "diskHash"}, obj{
			"error":    object([]string{"code", "message"}, obj{"code": obj{"const": "conflict"}, "message": str()}),
			"yours":    obj{"type": "string", "description": "Your text: the source sent, or the edits applied to base (when the server still has base)."},
			"disk":     obj{"type": "string", "description": "The file's text now."},
			"diskHash": obj{"type": "string", "description": "Its hash: the baseHash of a save that replaces it."},
			"base":     obj{"type": "string", "description": "The text baseHash names, when the server still has it (it keeps the last 64 texts it served or saved); absent otherwise."},
		}),
		"YAMLCreate": closed(object([]string{"path", "source"}, obj{
			"path":   obj{"type": "string", "description": "Slash-separated path inside the workflows folder ending in .yaml or .yml, e.g. \"my-flow.yaml\" or \"team/flow.yml\" (missing folders are made; hidden parts, .. and symlinked folders are refused)."},
			"source": str(),
		})),
		"YAMLValidate": closed(object([]string{"source"}, obj{
			"source": str(), "path": obj{"type": "string", "description": "Names the file in messages (default workflow.yaml)."},
		})),
		"YAMLValidateResult": object([]string{"valid", "problems", "graph"}, obj{
			"valid": obj{"type": "boolean"},
			"problems": arrayOf(obj{"allOf": []obj{ref("Problem")}, "properties": obj{
				"column": obj{"type": "integer", "description": "1-based column of the line's first non-blank character."}}}),
			"graph": ref("Graph"),
		}),
		"YAMLConversion": object([]string{"source", "path", "unconverted", "problems"}, obj{
			"source": obj{"type": "string", "description": "The YAML text (nothing is written; save it with POST /api/workflows/yaml)."},
			"path":   obj{"type": "string", "description": "A suggested file name."},
			"unconverted": arrayOf(object([]string{"node", "reason"}, obj{
				"node": obj{"type": "string", "description": "The drawn node's id (\"\" for the whole workflow)."}, "reason": str(),
			})),
			"problems": arrayOf(ref("Problem")),
		}),
		"YAMLPositions": object([]string{"positions"}, obj{
			"positions": obj{"type": "object", "description": "Node id -> canvas position.",
				"additionalProperties": object([]string{"x", "y"}, obj{"x": obj{"type": "number"}, "y": obj{"type": "number"}})},
		}),
		"ValidateResult": object([]string{"valid", "problems"}, obj{
			"valid": obj{"type": "boolean"}, "problems": arrayOf(ref("Problem")),
		}),
		"NormalizeResult": object([]string{"graph", "problems"}, obj{
			"graph": ref("Graph"), "problems": arrayOf(ref("Problem")),
		}),
		"Config": object([]string{"llmConfigured", "providers", "models", "defaultModel", "reasoningEfforts", "builtinTools", "mcpServers"}, obj{
			"llmConfigured": obj{"type": "boolean"}, "providers": arrayOf(ref("ConfigProvider")), "models": arrayOf(str()),
			"defaultModel": str(), "reasoningEfforts": arrayOf(str()), "authRequired": obj{"type": "boolean"},
			"builtinTools": obj{"type": "array", "items": str(), "description": "The built-in tools an agent may be given (data.tools.builtin)."},
			"mcpServers": obj{"type": "array", "items": object([]string{"name"}, obj{"name": str()}),
				"description": "The MCP servers of serve --mcp-config that drawn agents may pick (data.tools.mcp)."},
		}),
		"ConfigProvider": object([]string{"id", "enabled", "models"}, obj{
			"id": str(), "enabled": obj{"type": "boolean", "description": "Whether the provider is configured (AgentFlow's editor offers the models of enabled providers)."},
			"models": arrayOf(object([]string{"id", "reasoningEfforts"}, obj{"id": str(), "reasoningEfforts": arrayOf(str())})),
		}),
		"Auth": object([]string{"authRequired", "authenticated"}, obj{
			"authRequired": obj{"type": "boolean"}, "authenticated": obj{"type": "boolean"},
		}),
		"Health":    object([]string{"status"}, obj{"status": str(), "uptimeSeconds": obj{"type": "integer"}}),
		"CompatLog": compatLog,
		"CompatResult": object([]string{"runId", "status", "logs", "state", "waitingForInput", "currentNodeId", "workflow"}, obj{
			"runId": str(), "status": ref("RunStatus"), "logs": arrayOf(ref("CompatLog")),
			"state": object([]string{"outputs", "nodeStatuses"}, obj{
				"outputs":      obj{"type": "object", "additionalProperties": str()},
				"nodeStatuses": obj{"type": "object", "additionalProperties": str()},
			}),
			"waitingForInput": obj{"type": "boolean"}, "currentNodeId": nullable("string"),
			"pendingApprovals": arrayOf(ref("PendingApproval")), "error": str(),
			"workflow": obj{"anyOf": []obj{ref("AgentFlowGraph"), {"type": "null"}}},
		}),
		"AgentFlowGraph": closed(object([]string{"nodes", "connections"}, obj{
			"nodes": arrayOf(closed(object([]string{"id", "type", "x", "y", "data"}, obj{
				"id": str(), "type": str(), "x": obj{"type": "number"}, "y": obj{"type": "number"}, "data": obj{"type": "object"},
			}))),
			"connections": arrayOf(closed(object([]string{"source", "target"}, obj{
				"source": str(), "target": str(), "sourceHandle": str(), "targetHandle": str(),
			}))),
		}), "A graph in AgentFlow's shape (its WorkflowGraph): x and y on nodes, connections without ids."),
		"CompatError": closed(object([]string{"error", "code"}, obj{
			"error":    obj{"type": "string", "description": "The human-readable message (AgentFlow's client shows it as is)."},
			"code":     obj{"type": "string", "description": "The error code, as in Error."},
			"problems": arrayOf(ref("Problem")),
		}), "An error of the compatibility routes, in AgentFlow's shape."),
		"CompatRun": object([]string{"graph"}, obj{"graph": ref("GraphInput"), "input": str()}),
		"CompatResume": object([]string{"runId", "input"}, obj{
			"runId": str(), "input": ref("Decision"),
		}),
	}
}

func paths() obj {
	sse := obj{"description": "Server-Sent Events: data: {\"type\":\"start\",\"runId\"}, then {\"type\":\"log\",\"entry\":CompatLog} per event, then {\"type\":\"done\",\"result\":CompatResult} or {\"type\":\"error\",\"message\"}.",
		"content": obj{"text/event-stream": obj{"schema": str()}}}
	wsResp := func(desc string) obj {
		return obj{"description": desc}
	}
	p := obj{
		"/api/health": obj{"get": public(operation{"health", "Liveness; 503 while shutting down. Needs no token.", nil, nil,
			obj{"200": resp("OK", ref("Health")), "503": resp("Shutting down", ref("Health")), "403": errResp("Foreign Host header.")}}.build())},
		"/api/auth": obj{"get": public(operation{"authStatus", "Whether a token is required and whether this request carries it. Needs no token.", nil, nil,
			obj{"200": resp("Auth state", ref("Auth")), "403": errResp("Foreign Host header.")}}.build())},
		"/login": obj{"post": public(operation{"login", "Check the token and set the session cookie (HttpOnly, SameSite=Strict).", nil,
			body(object([]string{"token"}, obj{"token": str()})),
			obj{"200": resp("Signed in", ref("Auth")), "400": errResp("Malformed body."), "401": errResp("Wrong token."),
				"403": errResp("Cross-origin request."), "413": errResp("Body too large."),
				"429": errResp("Too many sign-in attempts from this address (Retry-After says when to try again).")}}.build())},
		"/logout": obj{"post": public(operation{"logout", "End the session: revoked on the server and the cookie cleared.", nil, nil,
			obj{"204": obj{"description": "Signed out"}, "403": errResp("Cross-origin request.")}}.build())},
		"/api/logout": obj{"post": public(operation{"apiLogout", "End the session: revoked on the server and the cookie cleared (the same as /logout).", nil, nil,
			obj{"204": obj{"description": "Signed out"}, "403": errResp("Cross-origin request.")}}.build())},
		"/api/config": obj{"get": operation{"config", "What the editor may offer (providers, models, reasoning efforts) and whether an LLM is configured.", nil, nil,
			withErrors(obj{"200": resp("Config", ref("Config"))})}.build()},
		"/api/openapi.json": obj{"get": operation{"openapi", "This document.", nil, nil,
			withErrors(obj{"200": resp("OpenAPI 3.1 document", obj{"type": "object"})})}.build()},
		"/metrics": obj{"get": operation{"metrics", "Prometheus metrics.", nil, nil,
			withErrors(obj{"200": obj{"description": "Prometheus text format", "content": obj{"text/plain": obj{"schema": str()}}}})}.build()},

		"/api/workflows": obj{
			"get": operation{"listWorkflows", "List workflows (without graphs), drawn ones and those of the workflow source.", nil, nil,
				withErrors(obj{"200": resp("Workflows", arrayOf(ref("Workflow")))})}.build(),
			"post": operation{"createWorkflow", "Save a new workflow. The graph may be in the legacy shape (it is normalized) and may have errors (they are returned as problems).", nil,
				body(ref("WorkflowWrite")),
				withErrors(obj{"201": resp("Saved", ref("SavedWorkflow"))}, "400", "413", "503")}.build(),
		},
		"/api/workflows/{id}": obj{
			"parameters": []obj{workflowIDParamDoc},
			"get": operation{"getWorkflow", "A workflow with its current graph. Workflows of the YAML folder (ids \"yaml.<escaped path>\") come with their source, a read-only graph projection and their problems.", nil, nil,
				withErrors(obj{"200": resp("Workflow", ref("Workflow"))}, "400", "404")}.build(),
			"put": operation{"updateWorkflow", "Save the next version. Carries the version edited; a stale version gets 409. A YAML workflow (id yaml.*) takes YAMLSave instead: the whole text (saved as given) or structured edits (applied in place, a one-field change is a one-line diff), with baseHash; the file is written atomically and the answer is the workflow as GET gives it (new sourceHash, problems, graph). A file changed on disk since baseHash gets 409 YAMLConflict; an edit that cannot be applied 400 invalid_edit (naming the edit, node, field and line); more than 500 edits, text over 4 MiB or over the graph limits 413; serve --read-only-workflows 403.", nil,
				body(ref("WorkflowSave")),
				withErrors(obj{"200": resp("Saved: SavedWorkflow, or Workflow for a YAML file", obj{"anyOf": []obj{ref("SavedWorkflow"), ref("Workflow")}}),
					"409": resp("Stale version; for a YAML file YAMLConflict", obj{"anyOf": []obj{ref("Error"), ref("YAMLConflict")}})}, "400", "404", "413", "503")}.build(),
			"delete": operation{"deleteWorkflow", "Delete a workflow and its versions (its runs are kept). YAML workflows are read-only (400).", nil, nil,
				withErrors(obj{"204": obj{"description": "Deleted"}}, "400", "404")}.build(),
		},
		"/api/workflows/yaml": obj{"post": operation{"createYAMLWorkflow", "Create a YAML workflow file in the workflows folder (written atomically; it may have problems, which are returned). 409 if the file exists, 400 for a path outside the folder, hidden or not .yaml/.yml, 403 under serve --read-only-workflows, 404 without a folder.", nil,
			body(ref("YAMLCreate")),
			withErrors(obj{"201": resp("Created", ref("Workflow"))}, "400", "404", "409", "413", "503")}.build()},
		"/api/yaml/validate": obj{"post": operation{"validateYAML", "Problems of YAML workflow text as switchyard validate reports them (same codes), with line and column, and its canvas projection: for live diagnostics while typing.", nil,
			body(ref("YAMLValidate")),
			withErrors(obj{"200": resp("Result", ref("YAMLValidateResult"))}, "400", "413", "503")}.build()},
		"/api/workflows/{id}/yaml": obj{
			"parameters": []obj{workflowIDParamDoc},
			"post": operation{"convertToYAML", "A drawn workflow as YAML text: agent -> prompt, approval -> approval, if -> when: conditions on its branches, start -> the run's input; what cannot be converted is listed in unconverted. Writes nothing.", nil, nil,
				withErrors(obj{"200": resp("Conversion", ref("YAMLConversion"))}, "400", "404")}.build(),
		},
		"/api/workflows/{id}/positions": obj{
			"parameters": []obj{workflowIDParamDoc},
			"get": operation{"getYAMLPositions", "Where the canvas shows a YAML workflow's nodes (kept by the server outside the file).", nil, nil,
				withErrors(obj{"200": resp("Positions", ref("YAMLPositions"))}, "400", "404")}.build(),
			"put": operation{"putYAMLPositions", "Replace a YAML workflow's node positions (an empty object forgets them). 403 under serve --read-only-workflows.", nil,
				body(ref("YAMLPositions")),
				withErrors(obj{"200": resp("Positions", ref("YAMLPositions"))}, "400", "404", "413")}.build(),
		},
		"/api/workflows/{id}/runs": obj{
			"parameters": []obj{workflowIDParamDoc},
			"post": operation{"runWorkflow", "Run a saved workflow (drawn or YAML) and, with wait, answer when the run ends or pauses: the way to call a workflow from another system (a webhook that answers when the last node finishes). 200 with the status and outputs when it ended or paused within the wait; 202 when it still runs (follow Location, GET /api/runs/{id}, or its websocket).", nil,
				body(ref("RunWorkflow")),
				withErrors(obj{"200": resp("The run, ended or paused", ref("WorkflowRunResult")), "202": resp("The run, still running", ref("WorkflowRunResult"))}, "400", "404", "413", "503")}.build(),
		},
		"/api/workflows/{id}/versions": obj{
			"parameters": []obj{workflowIDParamDoc},
			"get": operation{"listVersions", "Saved versions, newest first, without graphs.", nil, nil,
				withErrors(obj{"200": resp("Versions", arrayOf(ref("WorkflowVersion")))}, "400", "404")}.build(),
		},
		"/api/workflows/{id}/versions/{version}": obj{
			"parameters": []obj{workflowIDParamDoc, pathParam("version", "Version number (1, 2, ...).")},
			"get": operation{"getVersion", "One saved version with its graph.", nil, nil,
				withErrors(obj{"200": resp("Version", ref("WorkflowVersion"))}, "400", "404")}.build(),
		},
		"/api/validate": obj{"post": operation{"validate", "Validate a graph (current or legacy shape).", nil,
			body(ref("GraphRequest")),
			withErrors(obj{"200": resp("Result", ref("ValidateResult"))}, "400", "413", "503")}.build()},
		"/api/normalize": obj{"post": operation{"normalize", "Turn a graph (legacy or current shape) into the current shape.", nil,
			body(ref("GraphRequest")),
			withErrors(obj{"200": resp("Result", ref("NormalizeResult"))}, "400", "413", "503")}.build()},

		"/api/runs": obj{
			"get": operation{"listRuns", "List runs, newest first.", []obj{
				queryParam("workflowId", "Only runs of this workflow (a drawn workflow's id, or a YAML workflow's: its runs are matched on the file they ran).", str()),
				queryParam("status", "Only runs with this status.", ref("RunStatus")),
				queryParam("limit", "At most this many (1-1000, default 50).", obj{"type": "integer", "minimum": 1, "maximum": 1000}),
				queryParam("before", "Only runs created before this time (RFC 3339; pass the last run's createdAt to page).", dateTime()),
			}, nil, withErrors(obj{"200": resp("Runs", arrayOf(ref("RunSummary")))}, "400")}.build(),
			"post": operation{"createRun", "Start a saved workflow (workflowId: a drawn workflow, or a YAML workflow of the folder as its file is now) or a graph given inline. 400 with problems for a workflow with errors.", nil,
				body(ref("CreateRun")),
				withErrors(obj{"201": resp("The started run", ref("Run"))}, "400", "404", "413", "503")}.build(),
		},
		"/api/runs/{id}": obj{
			"parameters": []obj{runIDParamDoc},
			"get": operation{"getRun", "A run with its outputs, graph and node states.", nil, nil,
				withErrors(obj{"200": resp("Run", ref("Run"))}, "400", "404")}.build(),
		},
		"/api/runs/{id}/fork": obj{
			"parameters": []obj{runIDParamDoc},
			"post": operation{"forkRun", "Run from a node (fork): a new run of the same workflow in which every node upstream of nodeId reuses its result from this run (or the pinned output), and nodeId and what follows run again. The run must have ended (409 otherwise); the new run is linked to it (forkOf).", nil,
				body(ref("ForkRun")),
				withErrors(obj{"201": resp("The new run", ref("Run"))}, "400", "404", "409", "413", "503")}.build(),
		},
		"/api/runs/{id}/events": obj{
			"parameters": []obj{runIDParamDoc},
			"get": operation{"runEvents", "The run's stored events in seq order, a page at a time: a full page (limit events) means more may follow; ask again with after = the last seq.", []obj{afterParamDoc,
				queryParam("limit", "Page size (default 1000).", obj{"type": "integer", "minimum": 1, "maximum": 10000})}, nil,
				withErrors(obj{"200": resp("Events", arrayOf(ref("Event")))}, "400", "404")}.build(),
		},
		"/api/runs/{id}/ws": obj{
			"parameters": []obj{runIDParamDoc},
			"get": operation{"runEventsWS", "Websocket: every stored event with seq > after, then live events, one JSON Event per text message, in seq order without gaps. Closed with 1000 after the terminal event; 4000 \"too slow; reconnect with after=<seq>\" for a client that fell behind; 1001 on shutdown.",
				[]obj{afterParamDoc}, nil,
				withErrors(obj{"101": wsResp("Switching to the websocket protocol")}, "400", "404", "503")}.build(),
		},
		"/api/runs/{id}/approvals/{nodeId}": obj{
			"parameters": []obj{runIDParamDoc, pathParam("nodeId", "The waiting node.")},
			"post": operation{"decide", "Approve or reject a node waiting for a human: an approval node, a YAML approval node (reject runs its on_reject prompt and asks again) or an interactive YAML loop (approve runs the next iteration with the note as $LOOP_USER_INPUT, reject stops the run).", nil, body(ref("Decision")),
				withErrors(obj{"200": resp("The run", ref("Run"))}, "400", "404", "409", "413")}.build(),
		},
		"/api/runs/{id}/cancel": obj{
			"parameters": []obj{runIDParamDoc},
			"post": operation{"cancelRun", "Cancel a run.", nil, nil,
				withErrors(obj{"200": resp("The run", ref("Run"))}, "400", "404", "409")}.build(),
		},
		"/api/runs/{id}/continue": obj{
			"parameters": []obj{runIDParamDoc},
			"post": operation{"continueRun", "Continue an interrupted run from its last persisted state.", nil, nil,
				withErrors(obj{"200": resp("The run", ref("Run"))}, "400", "404", "409")}.build(),
		},
		"/api/approvals": obj{"get": operation{"listApprovals", "Every node waiting for a human decision, across all workflows and runs, longest waiting first, a page at a time: X-Total-Count says how many wait in all, and X-Next-Cursor, sent with a full page, is the after of the next. Answer one with POST /api/runs/{id}/approvals/{nodeId}.",
			[]obj{queryParam("limit", "Page size (default 1000).", obj{"type": "integer", "minimum": 1, "maximum": 10000}),
				queryParam("after", "The X-Next-Cursor of the previous page.", str())}, nil,
			withErrors(obj{"200": withHeaders(resp("Waiting approvals", arrayOf(ref("Approval"))), obj{
				"X-Total-Count": obj{"description": "How many approvals wait in all.", "schema": obj{"type": "integer"}},
				"X-Next-Cursor": obj{"description": "Sent with a full page: pass it as after to read on.", "schema": str()},
			})}, "400")}.build()},
		"/api/ws": obj{"get": operation{"statusWS", "Websocket: a StatusMessage per run status change, for run lists, and a WorkflowChangedMessage (type workflow_changed) when a YAML workflow file changes on disk or through the API (the folder is looked at every second).", nil, nil,
			withErrors(obj{"101": wsResp("Switching to the websocket protocol")}, "400", "503")}.build()},

		"/api/run": obj{"post": operation{"compatRun", "Compatibility: run a graph until it pauses or ends, then answer with its state.", nil,
			body(ref("CompatRun")),
			withCompatErrors(obj{"200": resp("Result", ref("CompatResult"))}, "400", "413", "503")}.build()},
		"/api/run-stream": obj{"post": operation{"compatRunStream", "Compatibility: run a graph, streaming its log as Server-Sent Events.", nil,
			body(ref("CompatRun")),
			withCompatErrors(obj{"200": sse}, "400", "413", "503")}.build()},
		"/api/resume": obj{"post": operation{"compatResume", "Compatibility: answer a paused run and wait until it pauses or ends again.", nil,
			body(ref("CompatResume")),
			withCompatErrors(obj{"200": resp("Result", ref("CompatResult"))}, "400", "404", "409", "413")}.build()},
		"/api/resume-stream": obj{"post": operation{"compatResumeStream", "Compatibility: answer a paused run, streaming the log that follows as Server-Sent Events.", nil,
			body(ref("CompatResume")),
			withCompatErrors(obj{"200": sse}, "400", "404", "409", "413")}.build()},
		"/api/run/{runId}": obj{
			"parameters": []obj{pathParam("runId", "Run id (a uuid).")},
			"get": operation{"compatGetRun", "Compatibility: a run's state and whole log.", nil, nil,
				withCompatErrors(obj{"200": resp("Result", ref("CompatResult"))}, "400", "404")}.build(),
		},
		"/api/default-workflow": obj{"get": operation{"defaultWorkflow", "A starter graph in AgentFlow's shape: start → agent → approval → agent.", nil, nil,
			withCompatErrors(obj{"200": resp("Graph", ref("AgentFlowGraph"))})}.build()},
	}
	return p
}

func buildOpenAPI() ([]byte, error) {
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":       "Switchyard API",
			"version":     "1",
			"description": "Draw, save and run AI-agent workflows. Errors are {\"error\": {\"code\", \"message\", \"problems\"?}}; the compatibility routes (/api/run, /api/run-stream, /api/resume, /api/resume-stream, /api/run/{runId}, /api/default-workflow) speak AgentFlow's shapes: graphs as {nodes: [{id, type, x, y, data}], connections}, errors as {\"error\": message, \"code\", \"problems\"?}. With a token configured, send Authorization: Bearer <token> or the session cookie from POST /login.",
		},
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"components": obj{
			"schemas": schemas(),
			"securitySchemes": obj{
				"bearer":  obj{"type": "http", "scheme": "bearer"},
				"session": obj{"type": "apiKey", "in": "cookie", "name": SessionCookie},
			},
		},
		"security": []obj{{"bearer": []string{}}, {"session": []string{}}},
		"paths":    paths(),
	}
	return json.Marshal(doc)
}
