// Package null turns Go zero values into JSON nulls.
//
// docs/json.md writes every key of every object, null for what is unknown or
// absent, never "" or 0 standing in for it. A JSON view of a struct whose
// empty string means "none" takes a *string; String makes one, nil for "".
package null
