package fakeopenai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A Script drives agent tool loops deterministically: rules match a
// conversation by its first user message (and optionally its system
// prompt) and list the model's turns, each some parallel tool calls and/or
// a text answer. SCRIPT.md in this package documents the file format.
//
//	rules:
//	  - match: "fix the failing test"   # regexp on the first user message
//	    system: "coding agent"          # optional regexp on the system prompt
//	    final: "gave up"                # answer once the turns run out (default "done")
//	    turns:
//	      - tool_calls:                 # one model turn: these calls, in parallel
//	          - name: Read
//	            arguments: {file_path: calc.py}
//	      - label: test
//	        tool_calls:
//	          - name: Bash
//	            arguments: {command: "python3 -m pytest -q"}
//	      - unless_result_contains: "failed"  # tests passed: the final answer
//	        text: "All green: {{last_result}}"
//	      - max_times: 3                # at most three fixes, then skipped
//	        tool_calls:
//	          - name: Edit
//	            arguments: {file_path: calc.py, old_string: "a - b", new_string: "a + b"}
//	        goto: test                  # rerun the tests
//
// The turn to answer is derived from the request alone, never from server
// state: the script is replayed over the assistant turns already in the
// transcript (a run of consecutive assistant messages or function_call
// items after the first user message is one turn), each choice made from
// the tool results that preceded it. So a request carrying the first k
// turns gets turn k+1 whether it comes from the live loop, a resumed one
// or another server. Choosing a turn from position p: the first turn at or
// after p whose conditions hold (if_result_contains / unless_result_contains
// test the previous turn's tool results; a turn taken max_times times is
// skipped) is taken, and the next position is its goto label or the turn
// after it. When no turn is left the rule answers its final text.
//
// Text and string arguments may use {{last_result}} (the last tool
// result's text), {{results}} (all results of the previous turn, one per
// line), {{prompt}} (the first user message) and {{turn}} (1-based turn
// number). Tool-call IDs are "call_<hash of system prompt and first user
// message>_<turn>_<index>": stable across replays, unique in a
// conversation. Arguments given as a YAML mapping are sent as JSON with the
// keys in file order; a string is sent verbatim (so invalid JSON can be
// tested). A turn's delay holds the reply back, e.g. so a test can kill the
// server mid-loop.
//
// Script is immutable after parsing and safe for concurrent use.
type Script struct {
	file  string
	rules []scriptRule
}

type scriptRule struct {
	name   string
	match  *regexp.Regexp // nil matches any first user message
	system *regexp.Regexp // nil matches any system prompt
	final  string
	turns  []scriptTurn
}

type scriptTurn struct {
	label     string
	text      string
	calls     []scriptCall
	ifHas     *string
	unlessHas *string
	next      int // index of the next turn: the goto target or the turn after
	maxTimes  int // 0: unlimited
	delay     time.Duration
}

type scriptCall struct {
	name string
	// args is JSON text (json true) in which templates are replaced by
	// JSON-escaped text, or a raw string sent verbatim.
	args string
	json bool
}

// ScriptError is a problem in a script file, located by line and field
// path (e.g. "rules[0].turns[2].tool_calls[0].name").
type ScriptError struct {
	File  string
	Line  int // 0 when unknown
	Field string
	Msg   string
}

func (e *ScriptError) Error() string {
	var sb strings.Builder
	sb.WriteString("fakeopenai: script ")
	sb.WriteString(e.File)
	if e.Line > 0 {
		sb.WriteString(":")
		sb.WriteString(strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Field)
	}
	sb.WriteString(": ")
	sb.WriteString(e.Msg)
	return sb.String()
}

// maxScriptBytes bounds a script file; real ones are a few kilobytes.
const maxScriptBytes = 8 << 20

// LoadScript reads and parses the script file at path (YAML or JSON).
func LoadScript(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fakeopenai: script: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fakeopenai: script %s: %w", path, err)
	}
	if len(data) > maxScriptBytes {
		return nil, &ScriptError{File: path, Msg: fmt.Sprintf("file is larger than %d bytes", maxScriptBytes)}
	}
	return ParseScript(path, data)
}

// ParseScript parses a script (YAML or JSON); file names it in errors.
// Errors are *ScriptError.
func ParseScript(file string, data []byte) (*Script, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := yamlErr(err)
		if jl, jmsg, ok := jsonSyntaxErr(data); ok {
			// yaml places JSON mistakes at the start of the enclosing flow
			// mapping; encoding/json knows the exact byte.
			return nil, &ScriptError{File: file, Line: jl, Msg: "JSON syntax: " + jmsg}
		}
		return nil, &ScriptError{File: file, Line: line, Msg: "YAML syntax: " + msg}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &ScriptError{File: file, Msg: "empty script: want a mapping with rules"}
	}
	p := &scriptParser{file: file}
	s := p.script(doc.Content[0])
	if p.err != nil {
		return nil, p.err
	}
	return s, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlErr splits "yaml: line 3: did not find..." into the line and the rest.
func yamlErr(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, msg[len(m[0]):]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// jsonSyntaxErr locates the syntax error of a script written as JSON.
func jsonSyntaxErr(data []byte) (int, string, bool) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return 0, "", false
	}
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(data, &v); !errors.As(err, &se) {
		return 0, "", false
	}
	return 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n")), se.Error(), true
}

// scriptParser walks the YAML tree and keeps the first error.
type scriptParser struct {
	file string
	err  *ScriptError
}

func (p *scriptParser) fail(n *yaml.Node, field, format string, args ...any) {
	if p.err == nil {
		p.err = &ScriptError{File: p.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
}

// fields checks that n is a mapping with only known, unique keys and
// returns its values by key.
func (p *scriptParser) fields(n *yaml.Node, path string, known ...string) map[string]*yaml.Node {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "expected a mapping, got %s", kindName(n))
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			p.fail(k, path, "keys must be strings")
			return nil
		}
		if !slices.Contains(known, key) {
			p.fail(k, join(path, key), "unknown field (known: %s)", strings.Join(known, ", "))
			return nil
		}
		if _, dup := out[key]; dup {
			p.fail(k, join(path, key), "given twice")
			return nil
		}
		out[key] = resolveAlias(v)
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return "scalar " + strconv.Quote(n.Value)
	}
	return "an unsupported node"
}

// str reads a string scalar; numbers and booleans are taken as written.
func (p *scriptParser) str(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, field, "expected a string, got %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (p *scriptParser) list(n *yaml.Node, field string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, field, "expected a list, got %s", kindName(n))
		return nil
	}
	return n.Content
}

func (p *scriptParser) regexp(n *yaml.Node, field string) *regexp.Regexp {
	s, ok := p.str(n, field)
	if !ok {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		p.fail(n, field, "bad regexp: %v", err)
		return nil
	}
	return re
}

// templateRE finds {{name}} placeholders.
var templateRE = regexp.MustCompile(`\{\{\s*([A-Za-z_]+)\s*\}\}`)

var templateNames = []string{"last_result", "results", "prompt", "turn"}

func (p *scriptParser) checkTemplates(n *yaml.Node, field, s string) {
	for _, m := range templateRE.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(templateNames, m[1]) {
			p.fail(n, field, "unknown placeholder {{%s}} (known: %s)", m[1], strings.Join(templateNames, ", "))
			return
		}
	}
}

func (p *scriptParser) script(root *yaml.Node) *Script {
	f := p.fields(root, "", "rules")
	if f == nil {
		return nil
	}
	rn, ok := f["rules"]
	if !ok {
		p.fail(root, "rules", "is required")
		return nil
	}
	items := p.list(rn, "rules")
	if p.err == nil && len(items) == 0 {
		p.fail(rn, "rules", "must list at least one rule")
	}
	s := &Script{file: p.file}
	for i, it := range items {
		r := p.rule(it, fmt.Sprintf("rules[%d]", i))
		if p.err != nil {
			return nil
		}
		s.rules = append(s.rules, r)
	}
	return s
}

func (p *scriptParser) rule(n *yaml.Node, path string) scriptRule {
	r := scriptRule{final: "done"}
	f := p.fields(n, path, "name", "match", "system", "final", "turns")
	if f == nil {
		return r
	}
	if v, ok := f["name"]; ok {
		r.name, _ = p.str(v, join(path, "name"))
	}
	if v, ok := f["match"]; ok {
		r.match = p.regexp(v, join(path, "match"))
	}
	if v, ok := f["system"]; ok {
		r.system = p.regexp(v, join(path, "system"))
	}
	if v, ok := f["final"]; ok {
		r.final, _ = p.str(v, join(path, "final"))
		p.checkTemplates(v, join(path, "final"), r.final)
	}
	tn, ok := f["turns"]
	if !ok {
		p.fail(n, join(path, "turns"), "is required")
		return r
	}
	items := p.list(tn, join(path, "turns"))
	if p.err == nil && len(items) == 0 {
		p.fail(tn, join(path, "turns"), "must list at least one turn")
	}
	labels := map[string]int{}
	gotos := make([]*yaml.Node, len(items))
	for i, it := range items {
		tp := fmt.Sprintf("%s.turns[%d]", path, i)
		t, g := p.turn(it, tp)
		if p.err != nil {
			return r
		}
		if t.label != "" {
			if _, dup := labels[t.label]; dup {
				p.fail(it, join(tp, "label"), "label %q is used by an earlier turn", t.label)
				return r
			}
			labels[t.label] = i
		}
		t.next = i + 1
		gotos[i] = g
		r.turns = append(r.turns, t)
	}
	for i, g := range gotos {
		if g == nil {
			continue
		}
		target, ok := labels[g.Value]
		if !ok {
			p.fail(g, fmt.Sprintf("%s.turns[%d].goto", path, i), "no turn has label %q", g.Value)
			return r
		}
		r.turns[i].next = target
	}
	return r
}

// turn parses one turn; the goto node is resolved once all labels are known.
func (p *scriptParser) turn(n *yaml.Node, path string) (scriptTurn, *yaml.Node) {
	var t scriptTurn
	f := p.fields(n, path, "label", "text", "tool_calls", "if_result_contains", "unless_result_contains", "goto", "max_times", "delay")
	if f == nil {
		return t, nil
	}
	if v, ok := f["label"]; ok {
		t.label, _ = p.str(v, join(path, "label"))
	}
	if v, ok := f["text"]; ok {
		t.text, _ = p.str(v, join(path, "text"))
		p.checkTemplates(v, join(path, "text"), t.text)
	}
	for _, cond := range []struct {
		key string
		dst **string
	}{{"if_result_contains", &t.ifHas}, {"unless_result_contains", &t.unlessHas}} {
		if v, ok := f[cond.key]; ok {
			if s, ok := p.str(v, join(path, cond.key)); ok {
				*cond.dst = &s
			}
		}
	}
	if v, ok := f["max_times"]; ok {
		k, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || k < 1 {
			p.fail(v, join(path, "max_times"), "expected a whole number >= 1, got %s", kindName(v))
		}
		t.maxTimes = k
	}
	if v, ok := f["delay"]; ok {
		if s, ok := p.str(v, join(path, "delay")); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				p.fail(v, join(path, "delay"), "expected a duration such as 500ms or 2s, got %q", s)
			}
			t.delay = d
		}
	}
	if v, ok := f["tool_calls"]; ok {
		for i, c := range p.list(v, join(path, "tool_calls")) {
			call := p.call(resolveAlias(c), fmt.Sprintf("%s.tool_calls[%d]", path, i))
			if p.err != nil {
				return t, nil
			}
			t.calls = append(t.calls, call)
		}
	}
	g := f["goto"]
	if g != nil {
		p.str(g, join(path, "goto"))
	}
	if p.err == nil && t.text == "" && len(t.calls) == 0 {
		p.fail(n, path, "a turn needs text or tool_calls")
	}
	return t, g
}

func (p *scriptParser) call(n *yaml.Node, path string) scriptCall {
	var c scriptCall
	f := p.fields(n, path, "name", "arguments")
	if f == nil {
		return c
	}
	v, ok := f["name"]
	if !ok {
		p.fail(n, join(path, "name"), "is required")
		return c
	}
	if c.name, ok = p.str(v, join(path, "name")); ok && c.name == "" {
		p.fail(v, join(path, "name"), "must not be empty")
	}
	a, ok := f["arguments"]
	field := join(path, "arguments")
	switch {
	case !ok || a.Tag == "!!null":
		c.args, c.json = "{}", true
	case a.Kind == yaml.MappingNode:
		var buf bytes.Buffer
		if err := yamlToJSON(&buf, a, 0); err != nil {
			var ne *nodeError
			if errors.As(err, &ne) {
				p.fail(ne.node, field, "%s", ne.msg)
			} else {
				p.fail(a, field, "%v", err)
			}
			return c
		}
		c.args, c.json = buf.String(), true
	case a.Kind == yaml.ScalarNode && a.Tag == "!!str":
		c.args = a.Value // sent verbatim, valid JSON or not
	default:
		p.fail(a, field, "expected a mapping (sent as a JSON object) or a string (sent verbatim), got %s", kindName(a))
		return c
	}
	p.checkTemplates(a, field, c.args)
	return c
}

type nodeError struct {
	node *yaml.Node
	msg  string
}

func (e *nodeError) Error() string { return e.msg }

// yamlToJSON writes a YAML value as JSON, keeping mapping keys in file
// order, as a model writes them in schema order.
func yamlToJSON(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	n = resolveAlias(n)
	if depth > 64 {
		return &nodeError{n, "nested too deeply"}
	}
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolveAlias(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return &nodeError{k, "object keys must be strings"}
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, k.Value)
			buf.WriteByte(':')
			if err := yamlToJSON(buf, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := yamlToJSON(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return &nodeError{n, err.Error()}
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return &nodeError{n, fmt.Sprintf("%s is not a JSON number", n.Value)}
		}
		if s, ok := v.(string); ok {
			writeJSONString(buf, s)
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return &nodeError{n, fmt.Sprintf("value %q cannot be written as JSON: %v", n.Value, err)}
		}
		buf.Write(b)
	default:
		return &nodeError{n, "unsupported YAML value"}
	}
	return nil
}

// writeJSONString writes s as a JSON string without HTML escaping.
func writeJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}

// jsonEscaped is s as it appears inside a JSON string literal.
func jsonEscaped(s string) string {
	var buf bytes.Buffer
	writeJSONString(&buf, s)
	return buf.String()[1 : buf.Len()-1]
}

// conversation is what a script sees of a request.
type conversation struct {
	prompt string // the first user message
	system string // system and developer messages and instructions, joined
	// before[i] are the tool results between assistant turn i-1 (or the
	// prompt) and assistant turn i; the last entry precedes the turn to answer.
	before [][]string
}

func readConversation(req *Request) (conversation, bool) {
	var c conversation
	var sys []string
	if req.Instructions != "" {
		sys = append(sys, req.Instructions)
	}
	first := -1
	for i, m := range req.Messages {
		if m.Role == "system" || m.Role == "developer" {
			sys = append(sys, m.Content)
		}
		if m.Role == "user" && first < 0 {
			first = i
			c.prompt = m.Content
		}
	}
	if first < 0 {
		return c, false
	}
	c.system = strings.Join(sys, "\n")
	var results []string
	inTurn := false
	for _, m := range req.Messages[first+1:] {
		switch m.Role {
		case "assistant":
			// Consecutive assistant messages (text, then one function_call
			// item per call on the Responses API) are one model turn.
			if !inTurn {
				c.before = append(c.before, results)
				results = nil
				inTurn = true
			}
		case "tool":
			results = append(results, m.Content)
			inTurn = false
		case "user", "system", "developer":
			inTurn = false
		}
		// Items without a role (reasoning, web_search_call) belong to the
		// turn around them.
	}
	c.before = append(c.before, results)
	return c, true
}

// Reply answers req from the first rule that matches its conversation; ok
// is false when none does (or the request has no user message).
func (s *Script) Reply(req *Request) (Reply, bool) {
	if s == nil {
		return Reply{}, false
	}
	c, ok := readConversation(req)
	if !ok {
		return Reply{}, false
	}
	for i := range s.rules {
		r := &s.rules[i]
		if (r.match == nil || r.match.MatchString(c.prompt)) && (r.system == nil || r.system.MatchString(c.system)) {
			return r.reply(i, &c), true
		}
	}
	return Reply{}, false
}

// reply replays the rule over the turns already taken and answers the next.
func (r *scriptRule) reply(ruleIdx int, c *conversation) Reply {
	visits := make([]int, len(r.turns))
	pos := 0
	step := len(c.before) - 1
	for i := range step {
		t := r.choose(pos, c.before[i], visits)
		if t < 0 {
			pos = len(r.turns)
			continue
		}
		visits[t]++
		pos = r.turns[t].next
	}
	results := c.before[step]
	vars := templateVars(c, results, step)
	t := r.choose(pos, results, visits)
	if t < 0 {
		return chunked(Reply{Text: expand(r.final, vars, false)})
	}
	turn := &r.turns[t]
	rep := chunked(Reply{Text: expand(turn.text, vars, false), Latency: turn.delay})
	if len(turn.calls) > 0 {
		h := fnv.New32a()
		fmt.Fprintf(h, "%d\x00%s\x00%s", ruleIdx, c.system, c.prompt)
		prefix := fmt.Sprintf("call_%08x_%d_", h.Sum32(), step+1)
		rep.ToolCalls = make([]ToolCall, len(turn.calls))
		for i, call := range turn.calls {
			rep.ToolCalls[i] = ToolCall{ID: prefix + strconv.Itoa(i), Name: call.name, Arguments: expand(call.args, vars, call.json)}
		}
	}
	return rep
}

// choose returns the first turn at or after pos that may be taken given
// the previous turn's results, or -1.
func (r *scriptRule) choose(pos int, results []string, visits []int) int {
	for t := pos; t < len(r.turns); t++ {
		turn := &r.turns[t]
		if turn.maxTimes > 0 && visits[t] >= turn.maxTimes {
			continue
		}
		if turn.ifHas != nil && !anyContains(results, *turn.ifHas) {
			continue
		}
		if turn.unlessHas != nil && anyContains(results, *turn.unlessHas) {
			continue
		}
		return t
	}
	return -1
}

func anyContains(results []string, sub string) bool {
	for _, r := range results {
		if strings.Contains(r, sub) {
			return true
		}
	}
	return false
}

func templateVars(c *conversation, results []string, step int) map[string]string {
	last := ""
	if len(results) > 0 {
		last = results[len(results)-1]
	}
	return map[string]string{
		"last_result": last,
		"results":     strings.Join(results, "\n"),
		"prompt":      c.prompt,
		"turn":        strconv.Itoa(step + 1),
	}
}

// expand fills {{name}} placeholders; inJSON escapes the values for use
// inside JSON string literals (placeholders can only sit there).
func expand(s string, vars map[string]string, inJSON bool) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return templateRE.ReplaceAllStringFunc(s, func(m string) string {
		v, ok := vars[templateRE.FindStringSubmatch(m)[1]]
		if !ok {
			return m
		}
		if inJSON {
			return jsonEscaped(v)
		}
		return v
	})
}
