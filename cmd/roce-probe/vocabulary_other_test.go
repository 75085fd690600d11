//go:build !linux

package main

import (
	"runtime"
	"testing"
)

// vocabularyLab: the lab command exists on Linux only, so its rows of
// docs/json.md cannot run here; TestVocabulary logs them as not run.
func vocabularyLab(t *testing.T) {
	t.Helper()
	c := vocabulary(t)
	why := "the lab command exists on Linux only, not on " + runtime.GOOS
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range []string{"command:lab status -o json", "command:lab up -o json", "lab_status", "lab_netdev"} {
		c.notRunnable[k] = why
	}
}
