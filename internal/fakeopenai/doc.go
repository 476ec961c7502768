// Package fakeopenai is a fake OpenAI-compatible HTTP server that speaks the
// real wire protocol, so the real openai-go client can be driven against it
// in tests and by `switchyard load`.
//
// It serves POST /v1/chat/completions and POST /v1/responses (both plain JSON
// and SSE streaming, with tool calls, and web_search_call items on the
// Responses API) and GET /v1/models. The "/v1" prefix is optional, so
// Handler() can be mounted anywhere.
//
// Basic use:
//
//	srv := fakeopenai.StartT(t)              // or fakeopenai.Start(opts...) + defer srv.Close()
//	client := openai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("test"))
//
// Replies are chosen per completion request: first from the FIFO filled by
// Enqueue, then from a Script rule matching the conversation
// (WithScript/SetScript, loaded by LoadScript), then by the HandlerFunc
// (WithHandler/SetHandler), else DefaultReply ("echo: <last user message>"):
//
//	srv.Enqueue(
//		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "lookup", Arguments: `{"q":"x"}`}}},
//		fakeopenai.Reply{Text: "done"},
//	)
//	srv.SetHandler(func(req *fakeopenai.Request) fakeopenai.Reply {
//		if res := req.ToolResults(); len(res) > 0 {
//			return fakeopenai.Reply{Text: "tool said " + res[0].Content}
//		}
//		return fakeopenai.DefaultReply(req)
//	})
//
// A Script (YAML or JSON, see SCRIPT.md) drives whole agent tool loops
// deterministically and statelessly: read a file, run the tests through
// Bash, edit, rerun until they pass, answer.
//
// A Reply can also inject faults: Status (e.g. 429 with Retry-After, 500,
// 401), Malformed JSON, Hang until the client or server gives up, Reset of the
// TCP connection, and TruncateStream. Latency and ChunkDelay pace replies;
// WithLatency sets a server-wide default for load tests.
//
// Every completion request is parsed into a Request (messages, tool results,
// tools, reasoning effort, response format, headers, raw body) and kept in a
// bounded log (Requests, LastRequest, Reset). Counters report total requests,
// requests in flight and the maximum concurrency seen.
//
// The server only listens on loopback and is safe for concurrent use.
package fakeopenai
