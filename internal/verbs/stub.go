//go:build !ibverbs || !cgo

package verbs

import (
	"fmt"
	"time"
)

// errNotBuilt names what was asked for and wraps ErrNotBuilt.
func errNotBuilt(what string) error {
	return fmt.Errorf("verbs: %s: %w", what, ErrNotBuilt)
}

// Devices lists the names of the RDMA devices libibverbs sees. This build
// has no libibverbs: it returns ErrNotBuilt.
func Devices() ([]string, error) { return nil, errNotBuilt("list RDMA devices") }

// Context is an open RDMA device. This build cannot open one.
type Context struct{}

// Open opens the RDMA device called name. This build has no libibverbs:
// it returns an error wrapping ErrNotBuilt.
func Open(name string) (*Context, error) {
	return nil, errNotBuilt(fmt.Sprintf("open RDMA device %q", name))
}

// Name returns the device name.
func (c *Context) Name() string { return "" }

// Close does nothing in this build.
func (c *Context) Close() error { return nil }

// QueryPort returns ErrNotBuilt in this build.
func (c *Context) QueryPort(port int) (PortAttr, error) {
	return PortAttr{}, errNotBuilt("query port")
}

// QueryGID returns ErrNotBuilt in this build.
func (c *Context) QueryGID(port, index int) (GIDEntry, error) {
	return GIDEntry{}, errNotBuilt("query GID")
}

// NewUD returns ErrNotBuilt in this build.
func (c *Context) NewUD(port int, qkey uint32) (*UD, error) {
	return nil, errNotBuilt("create UD QP")
}

// NewUDConfig returns ErrNotBuilt in this build.
func (c *Context) NewUDConfig(cfg UDConfig) (*UD, error) {
	return nil, errNotBuilt("create UD QP")
}

// UD is an unreliable-datagram queue pair. This build cannot create one.
type UD struct{}

// QPN returns 0 in this build.
func (u *UD) QPN() uint32 { return 0 }

// Config returns the zero UDConfig in this build.
func (u *UD) Config() UDConfig { return UDConfig{} }

// Close does nothing in this build.
func (u *UD) Close() error { return nil }

// AH is an address handle. This build cannot create one.
type AH struct {
	Attr AHAttr // the attributes it was created with
}

// CreateAH returns ErrNotBuilt in this build.
func (u *UD) CreateAH(a AHAttr) (*AH, error) { return nil, errNotBuilt("create address handle") }

// Close does nothing in this build.
func (h *AH) Close() error { return nil }

// Send returns ErrNotBuilt in this build.
func (u *UD) Send(ah *AH, remoteQPN, remoteQKey uint32, payload []byte, timeout time.Duration) error {
	return errNotBuilt("send")
}

// Recv returns ErrNotBuilt in this build.
func (u *UD) Recv(timeout time.Duration) (Completion, error) {
	return Completion{}, errNotBuilt("receive")
}
