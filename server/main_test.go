package server

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain runs the package's tests and then, for a full run (no -run
// filter), fails if a documented operation never had its success answer
// checked against the OpenAPI document: every route's responses are
// validated by the tests that call it (see checkAgainstSpec).
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		if missing := uncoveredOperations(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test checked a success answer of these documented operations against the OpenAPI document:\n")
			for _, op := range missing {
				fmt.Fprintf(os.Stderr, "  %s\n", op)
			}
			code = 1
		}
	}
	os.Exit(code)
}
