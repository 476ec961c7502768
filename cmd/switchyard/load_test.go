package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLoadRunsReportsCPUAndProfiles runs the real load command end to end:
// it starts its own server, completes runs, reports the CPU per run of both
// processes, and writes the two CPU profiles asked for.
func TestLoadRunsReportsCPUAndProfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	driverProf, serverProf := filepath.Join(dir, "load.prof"), filepath.Join(dir, "serve.prof")
	cmd := exec.Command(binary, "load", "runs", "--duration", "1s", "--clients", "2", "--json", "--quiet",
		"--cpuprofile", driverProf)
	cmd.Env = append(os.Environ(), "SWITCHYARD_CPUPROFILE="+serverProf)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("load: %v\n%s", err, errb.String())
	}
	var got struct {
		Scenario string `json:"scenario"`
		Result   struct {
			Completed         int     `json:"completed"`
			Failed            int     `json:"failed"`
			ServerCPUPerRunUs float64 `json:"serverCpuPerRunUs"`
			DriverCPUPerRunUs float64 `json:"driverCpuPerRunUs"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	r := got.Result
	if got.Scenario != "runs" || r.Completed == 0 || r.Failed != 0 {
		t.Fatalf("result %+v", got)
	}
	if r.ServerCPUPerRunUs <= 0 || r.DriverCPUPerRunUs <= 0 {
		t.Errorf("CPU per run not measured: server %v µs, driver %v µs", r.ServerCPUPerRunUs, r.DriverCPUPerRunUs)
	}
	for _, p := range []string{driverProf, serverProf} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", p, err)
		}
	}
}

// TestLoadApprovalsReportsPausedMemory: with every run paused the load
// command reads the server's RSS and goroutines; each approval is won once.
func TestLoadApprovalsReportsPausedMemory(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "load", "approvals", "--runs", "30", "--json", "--quiet")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("load: %v\n%s", err, errb.String())
	}
	var got struct {
		Result struct {
			Runs       int     `json:"runs"`
			Wins       int     `json:"wins"`
			WonTwice   int     `json:"wonTwice"`
			Completed  int     `json:"completed"`
			RSS        float64 `json:"serverRssPausedMb"`
			Goroutines int     `json:"serverGoroutines"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	r := got.Result
	if r.Runs != 30 || r.Wins != 30 || r.WonTwice != 0 || r.Completed != 30 {
		t.Fatalf("result %+v", r)
	}
	if r.RSS <= 0 || r.Goroutines <= 0 {
		t.Errorf("paused memory not measured: %+v", r)
	}
}
