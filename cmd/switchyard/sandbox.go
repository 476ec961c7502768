package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/switchyard/switchyard/internal/proc"
)

// sandboxFlag is serve's --sandbox (run and resume read
// $SWITCHYARD_SANDBOX alone).
func sandboxFlag(fs *flag.FlagSet) *string {
	return fs.String("sandbox", envOr("SWITCHYARD_SANDBOX", "auto"),
		"hide the data folder and the token file from what nodes run (bash and script nodes, agents' Bash, hooks, MCP servers): "+
			"auto (where the kernel allows it, with a warning where it does not), on (refuse to start without), off (default $SWITCHYARD_SANDBOX or auto)")
}

// checkSandboxMode refuses a --sandbox value that is none of the three.
func checkSandboxMode(mode string) error {
	switch mode {
	case "auto", "on", "off":
		return nil
	}
	return fmt.Errorf("--sandbox %q: want auto, on or off", mode)
}

// startSandbox puts the processes nodes start from now on in the sandbox
// (internal/proc), hiding the data folder (the database, other runs'
// workspaces and artifacts) and the token file. In auto mode a machine
// that cannot sandbox gets a warning, returned for the caller to print;
// in on mode it is an error.
func startSandbox(mode, artifacts, tokenFile string) (warning string, err error) {
	if err := checkSandboxMode(mode); err != nil {
		return "", err
	}
	if mode == "off" {
		return "", proc.SetSandbox(nil)
	}
	hide := []string{filepath.Dir(artifacts)} // the data folder
	if tokenFile != "" {
		hide = append(hide, tokenFile)
	}
	err = proc.SetSandbox(&proc.Sandbox{Hide: hide})
	switch {
	case err == nil:
		return "", nil
	case mode == "on":
		return "", fmt.Errorf("--sandbox on: %w", err)
	}
	return fmt.Sprintf("no sandbox for what nodes run (%v): bash and script nodes, agents' Bash, hooks and MCP servers "+
		"can read and write the data folder %s (the database included); --sandbox off runs without one and without this warning, "+
		"--sandbox on refuses to start without one", err, filepath.Dir(artifacts)), nil
}
