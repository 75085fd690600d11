//go:build unix

package capture_test

// mapFilesWork: this system maps capture files.
const mapFilesWork = true
