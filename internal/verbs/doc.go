// Package verbs is roce-probe's only cgo code: a small binding to
// libibverbs (rdma-core) that opens an RDMA device, builds an unreliable
// datagram (UD) queue pair, creates address handles and sends and receives
// single datagrams. It exists so that ah.Create and the lab tests can make
// real RoCE traffic; it is internal because its API follows the verbs calls
// rather than roce-probe's own types (ah.Attr, gid.GID).
//
// # Build
//
// The binding is compiled only with the build tag ibverbs and cgo enabled,
// against Debian's libibverbs-dev (headers) and libibverbs1 plus
// ibverbs-providers (the rxe, mlx5, ... user-space drivers) at run time:
//
//	apt-get install libibverbs-dev ibverbs-providers
//	go build -tags ibverbs ./...
//
// Without the tag (or with CGO_ENABLED=0) every function returns an error
// wrapping ErrNotBuilt: "built without ibverbs (rebuild with -tags ibverbs
// and libibverbs-dev)". The types, constants and the errno decoding in
// Error are available in both builds.
//
// # API
//
//	Devices() ([]string, error)                      // ibv_get_device_list
//	Open(name string) (*Context, error)              // ibv_open_device; ErrNoDevice if absent
//	(*Context).Close() error                         // closes every UD and AH made from it
//	(*Context).QueryPort(port int) (PortAttr, error) // ibv_query_port
//	(*Context).QueryGID(port, index int) (GIDEntry, error) // ibv_query_gid_ex
//	(*Context).NewUD(port int, qkey uint32) (*UD, error)   // PD, CQs, UD QP INIT→RTR→RTS, registered buffers
//	(*Context).NewUDConfig(UDConfig) (*UD, error)          // the same with a chosen SQ PSN and sizes
//	(*UD).QPN() uint32
//	(*UD).CreateAH(AHAttr) (*AH, error)              // ibv_create_ah; *Error with the errno decoded
//	(*AH).Close() error                              // ibv_destroy_ah
//	(*UD).Send(ah *AH, remoteQPN, remoteQKey uint32, payload []byte, timeout time.Duration) error
//	(*UD).Recv(timeout time.Duration) (Completion, error) // GRH buffer + payload of one receive
//	(*UD).Close() error
//
// AHAttr mirrors struct ibv_ah_attr field by field (with the GRH flattened);
// Completion mirrors struct ibv_wc plus the 40-byte GRH buffer and the
// payload. libibverbs' struct ibv_wc has no VLAN and no network header
// type, so a Completion carries neither; ah.FromWC in rdma-core mode works
// without them, as ibv_init_ah_from_wc does.
//
// A UD is not safe for concurrent use. Send waits for the send completion
// (the QP signals every send), so one datagram is in flight at a time.
// Recv keeps RecvDepth receive buffers posted and reposts each one after
// copying its contents out.
//
// # Errors
//
// Failing verbs return *Error, which names the call, the errno and what
// the errno means for that call on RoCE (for ibv_create_ah: EINVAL for
// is_global = 0, a bad static_rate, port or sgid_index; ENODATA for an
// empty GID entry; ETIMEDOUT when ARP / neighbour discovery got no answer).
// errors.Is(err, syscall.ETIMEDOUT) works on it. Timeouts of Send and Recv
// wrap ErrTimeout.
package verbs
