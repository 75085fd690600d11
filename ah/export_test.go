//go:build lab && ibverbs && cgo

package ah

// VerbsAttr lets the lab tests (package ah_test, which reads the live host
// through package host, an importer of ah) create AHs on their own UD
// QPs from an Attr exactly as Create does.
var VerbsAttr = verbsAttr
