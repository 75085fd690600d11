package gid

import "fmt"

// Type is the GID type of a table entry, which decides the RoCE version of
// the packets sent with it. The values equal rdma-core's enum ibv_gid_type
// (IBV_GID_TYPE_IB = 0, IBV_GID_TYPE_ROCE_V1 = 1, IBV_GID_TYPE_ROCE_V2 = 2)
// and the kernel's enum ib_gid_type since Linux 5.10.
type Type uint8

// GID types.
const (
	TypeIB     Type = 0 // InfiniBand link layer
	TypeRoCEv1 Type = 1 // RoCE v1: EtherType 0x8915 with a GRH
	TypeRoCEv2 Type = 2 // RoCE v2: IPv4 or IPv6, UDP port 4791
)

// String returns "IB", "RoCE v1" or "RoCE v2".
func (t Type) String() string {
	switch t {
	case TypeIB:
		return "IB"
	case TypeRoCEv1:
		return "RoCE v1"
	case TypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// ParseType parses the names String returns, the sysfs strings of
// gid_attrs/types ("IB/RoCE v1", "RoCE v2") and the short forms "v1", "v2".
func ParseType(s string) (Type, error) {
	switch s {
	case "IB", "ib":
		return TypeIB, nil
	case "RoCE v1", "IB/RoCE v1", "v1", "roce-v1", "1":
		return TypeRoCEv1, nil
	case "RoCE v2", "v2", "roce-v2", "2":
		return TypeRoCEv2, nil
	}
	return 0, fmt.Errorf("gid: unknown GID type %q: want \"IB\", \"RoCE v1\" or \"RoCE v2\"", s)
}

// MarshalText implements encoding.TextMarshaler with String's form.
func (t Type) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseType.
func (t *Type) UnmarshalText(b []byte) error {
	v, err := ParseType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
