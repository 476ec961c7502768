package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/engine"
)

// NotifierOptions configures a Notifier.
type NotifierOptions struct {
	// URL receives one JSON POST per node that starts waiting for a decision.
	URL string
	// PublicURL is where people open the UI (e.g. http://127.0.0.1:8080);
	// links in notices point there. It can also be set later (SetBase),
	// once the listen address is known.
	PublicURL string
	Logger    *slog.Logger
	// Client sends the posts (default: a client with a 10 s timeout).
	Client *http.Client
	// Backoff is the wait before each retry (default 1, 2, 4, 8, 16 s).
	Backoff []time.Duration
	// Queue is how many notices may wait to be sent (default 1000); when
	// it is full, new notices are dropped (and logged) so a dead receiver
	// never slows a run.
	Queue int
}

// Notice is the JSON body the notifier posts. Text makes it a valid Slack
// (and Mattermost, Rocket.Chat, Discord /slack) incoming-webhook message.
type Notice struct {
	Event  string    `json:"event"`
	RunID  string    `json:"runId"`
	NodeID string    `json:"nodeId"`
	Prompt string    `json:"prompt"`
	Input  string    `json:"input"`
	Link   string    `json:"link,omitempty"`
	Since  time.Time `json:"since"`
	Text   string    `json:"text"`
}

// Notifier is an engine sink that tells a webhook when a run waits for a
// human. Emit never blocks: notices go through a bounded queue to one
// sender that retries with backoff.
type Notifier struct {
	url     string
	shown   string // url without its path and query, for logs
	client  *http.Client
	log     *slog.Logger
	backoff []time.Duration
	queue   chan Notice

	mu   sync.Mutex
	base string

	dropped atomic.Int64 // notices dropped on a full queue

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// maxNoticeInput bounds the output quoted in a notice; the link has the rest.
const maxNoticeInput = 4000

// NewNotifier validates the URL and starts the sender.
func NewNotifier(o NotifierOptions) (*Notifier, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not quoted: a webhook URL's path is its secret (Slack's is).
		return nil, errors.New("notify URL: want an http:// or https:// URL with a host")
	}
	if o.PublicURL != "" {
		if p, err := url.Parse(o.PublicURL); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("public URL %q: want an http:// or https:// URL with a host", o.PublicURL)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	// Never follow a redirect: the receiver would choose where the server
	// POSTs next, e.g. its own cancel route on loopback (blind SSRF). A
	// 3xx is a failed delivery, not retried.
	client := *o.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if o.Backoff == nil {
		o.Backoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	}
	if o.Queue <= 0 {
		o.Queue = 1000
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{url: o.URL, shown: redactURL(u), client: &client, log: o.Logger, backoff: o.Backoff,
		queue: make(chan Notice, o.Queue), base: strings.TrimRight(o.PublicURL, "/"),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go n.send()
	return n, nil
}

// SetBase sets the UI's address for links, unless a public URL was given.
func (n *Notifier) SetBase(base string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.base == "" {
		n.base = strings.TrimRight(base, "/")
	}
}

// Emit queues a notice for a wait_input event; other events are ignored.
func (n *Notifier) Emit(ev *engine.Event) {
	if ev.Type != engine.EvWaitInput {
		return
	}
	var data struct {
		Input string `json:"input"`
	}
	_ = json.Unmarshal(ev.Data, &data) // a notice without the input is still worth sending
	n.mu.Lock()
	link := ""
	if n.base != "" {
		link = n.base + "/runs/" + url.PathEscape(ev.RunID)
	}
	n.mu.Unlock()
	in := data.Input
	if len(in) > maxNoticeInput {
		in = truncate(in, maxNoticeInput)
	}
	no := Notice{Event: ev.Type, RunID: ev.RunID, NodeID: ev.NodeID, Prompt: ev.Content, Input: in,
		Link: link, Since: ev.Timestamp}
	no.Text = noticeText(no)
	select {
	case n.queue <- no:
	default:
		// Logged on the first drop and every 100th, not once per notice.
		if d := n.dropped.Add(1); d%100 == 1 {
			n.log.Warn("notify queue full; notices dropped", "run", ev.RunID, "node", ev.NodeID, "dropped", d)
		}
	}
}

// noticeText is the Slack message. Everything in it is escaped as Slack
// asks (&, <, >): a prompt or run input reaches the channel as text, never
// as a <!channel> mention, a <@user> ping or a disguised <url|link>.
func noticeText(no Notice) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approval needed: node %s of run %s", slackEscape(no.NodeID), slackEscape(no.RunID))
	if no.Prompt != "" {
		fmt.Fprintf(&b, "\n%s", slackEscape(no.Prompt))
	}
	if no.Link != "" {
		fmt.Fprintf(&b, "\n%s", slackEscape(no.Link))
	}
	return b.String()
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackEscape escapes Slack's control characters in message text.
func slackEscape(s string) string { return slackEscaper.Replace(s) }

// redactURL keeps a webhook URL's scheme and host: its path and query are
// the secret (Slack's /services/T…/B…/…).
func redactURL(u *url.URL) string {
	r := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		r += "/…"
	}
	return r
}

// Close stops the sender; notices not yet delivered are dropped.
func (n *Notifier) Close() {
	n.once.Do(func() {
		n.cancel()
		<-n.done
	})
}

func (n *Notifier) send() {
	defer close(n.done)
	for {
		select {
		case <-n.ctx.Done():
			return
		case no := <-n.queue:
			n.deliver(no)
		}
	}
}

// errPermanent marks an answer retrying cannot fix (a 4xx other than 408/429).
var errPermanent = errors.New("permanent")

func (n *Notifier) deliver(no Notice) {
	body, _ := json.Marshal(no)
	for attempt := 0; ; attempt++ {
		err := n.post(body)
		if err == nil || n.ctx.Err() != nil {
			return
		}
		if errors.Is(err, errPermanent) || attempt >= len(n.backoff) {
			n.log.Warn("notify failed; notice dropped", "run", no.RunID, "node", no.NodeID,
				"attempts", attempt+1, "err", err)
			return
		}
		n.log.Info("notify failed; will retry", "run", no.RunID, "node", no.NodeID,
			"in", n.backoff[attempt], "err", err)
		t := time.NewTimer(n.backoff[attempt])
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (n *Notifier) post(body []byte) error {
	req, err := http.NewRequestWithContext(n.ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: post to %s: cannot build the request", errPermanent, n.shown)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "switchyard-notify")
	resp, err := n.client.Do(req)
	if err != nil {
		// net/http words its errors with the full URL: keep only the host.
		var ue *url.Error
		if errors.As(err, &ue) {
			return fmt.Errorf("%s %s: %w", ue.Op, n.shown, ue.Err)
		}
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode < 400:
		return fmt.Errorf("%w: receiver answered %s (redirects are not followed)", errPermanent, resp.Status)
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("receiver answered %s", resp.Status)
	default:
		return fmt.Errorf("%w: receiver answered %s", errPermanent, resp.Status)
	}
}
