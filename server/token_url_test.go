package server

import (
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
)

// The address serve prints carries the token (/?token=...): the UI shell
// loads from it without a session, the answer forbids any Referer that
// would pass the address on, and the request log does not record it.
func TestTokenInTheAddressStaysPrivate(t *testing.T) {
	t.Parallel()
	ui := fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>ui</title>")}}
	const token = "tok-in-the-address-0123456789abcdef"
	v := newEnv(t, func(o *envOpts) { o.noLLM = true; o.token = token; o.ui = ui })
	req, _ := http.NewRequest("GET", v.url+"/?token="+token, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("UI shell: %d, Referrer-Policy %q", res.StatusCode, res.Header.Get("Referrer-Policy"))
	}
	// The token signs in (the UI's POST /login) and works as a bearer.
	v.must(http.StatusOK, "POST", "/login", map[string]string{"token": token}, nil)
	v.must(http.StatusOK, "GET", "/api/config", nil, nil)
	if strings.Contains(v.logs.String(), token) {
		t.Errorf("the log holds the token:\n%s", grepLines(v.logs.String(), token))
	}
}
