package tools

import "testing"

// TestResultZero pins the zero Result as a successful, empty answer.
func TestResultZero(t *testing.T) {
	var r Result
	if r.IsError || r.Cut || r.Output != "" {
		t.Fatalf("zero Result = %+v", r)
	}
}
