package qos

import "net/netip"

// Settings applied behind the application's back: values the kernel or a
// driver uses in place of (or in addition to) what an application asks
// for. Each is read by internal/host from the file named in Source;
// Status says whether the host exposes it at all.

// SettingStatus says whether a setting was read.
type SettingStatus string

// Statuses of a setting.
const (
	// SettingRead: the file was read; the value fields hold it.
	SettingRead SettingStatus = "read"
	// SettingNotExposed: the driver or kernel has no such file here
	// (upstream mlx5 has no tc/ override; configfs is not mounted; the
	// device has no rdma_cm configfs group yet). Reason says which.
	SettingNotExposed SettingStatus = "not exposed"
	// SettingError: the file exists but could not be read or parsed.
	SettingError SettingStatus = "error"
)

// RDMACMDefault is rdma_cm's per-port defaults in configfs
// (drivers/infiniband/core/cma_configfs.c, default_roce_tos_show and
// default_roce_mode_show, Linux 6.1): the ToS of every rdma_cm
// connection whose application sets none (cma.c cma_resolve_iboe_route:
// tos = id_priv->tos_set ? id_priv->tos : default_roce_tos) and the GID
// type rdma_cm picks.
type RDMACMDefault struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// ToS is default_roce_tos; nil when not read.
	ToS *uint8 `json:"default_roce_tos"`
	// Mode is default_roce_mode ("RoCE v2" or "IB/RoCE v1"); nil when
	// not read.
	Mode   *string       `json:"default_roce_mode"`
	Source string        `json:"source"`
	Status SettingStatus `json:"status"`
	Reason *string       `json:"reason"`
}

// TCOverride is MLNX_OFED mlx5_ib's per-port traffic class override,
// /sys/class/infiniband/<dev>/tc/<port>/traffic_class (mlnx-ofa_kernel
// drivers/infiniband/hw/mlx5/main_ext.c traffic_class_show/store; OFED
// 25.10). A global value replaces the traffic class of every connected
// QP on the port (mlx5_ib_qp_set_tclass in qp.c, applied by
// mlx5_set_path as dscp = tclass >> 2); rules replace it for matching
// source/destination addresses. User AHs (UD) are not affected. Upstream
// mlx5 has no such file.
type TCOverride struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Global is the port-wide traffic class ("Global tclass=N"); nil when
	// none is set.
	Global *uint8        `json:"traffic_class"`
	Rules  []TCRule      `json:"rules"`
	Source string        `json:"source"`
	Status SettingStatus `json:"status"`
	Reason *string       `json:"reason"`
}

// TCRule is one address rule of a TCOverride: connections from Src (nil:
// any) to an address in Dst (nil: any) get TrafficClass.
type TCRule struct {
	Src          *netip.Addr   `json:"src"`
	Dst          *netip.Prefix `json:"dst"`
	TrafficClass uint8         `json:"traffic_class"`
}

// Active reports whether the override changes any connection.
func (o *TCOverride) Active() bool {
	return o != nil && o.Status == SettingRead && (o.Global != nil || len(o.Rules) > 0)
}

// DCQCN is a netdev's congestion control (DCQCN) configuration as MLNX_OFED
// mlx5_core exposes it under /sys/class/net/<netdev>/ecn (mlnx-ofa_kernel
// drivers/net/ethernet/mellanox/mlx5/core/en_sysfs.c mlx5e_fill_attributes,
// en_ecn.c mlx5e_show_ecn_enable / mlx5e_show_cnp_dscp /
// mlx5e_show_cnp_802p_prio; OFED 25.10): roce_np/enable/<p> (the
// notification point sends CNPs for CE-marked packets of priority p),
// roce_rp/enable/<p> (the reaction point slows down on CNPs), and the
// DSCP and 802.1p priority CNPs are sent with. Upstream mlx5 keeps these
// in debugfs (drivers/infiniband/hw/mlx5/cong.c, cc_params, root only),
// which is not read.
type DCQCN struct {
	Netdev string `json:"netdev"`
	// NP and RP are the enable bits per priority; nil entries were not
	// readable.
	NP      [8]*bool      `json:"np_enable"`
	RP      [8]*bool      `json:"rp_enable"`
	CNPDSCP *uint8        `json:"cnp_dscp"`
	CNPPrio *uint8        `json:"cnp_802p_prio"`
	Source  string        `json:"source"`
	Status  SettingStatus `json:"status"`
	Reason  *string       `json:"reason"`
}

// Enabled reports whether DCQCN's notification and reaction points are
// on for prio (nil when not known).
func (d *DCQCN) Enabled(prio uint8) (np, rp *bool) {
	if d == nil || d.Status != SettingRead || prio > 7 {
		return nil, nil
	}
	return d.NP[prio], d.RP[prio]
}
