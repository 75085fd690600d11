//go:build !unix

package capture_test

// mapFilesWork: this system does not map capture files.
const mapFilesWork = false
