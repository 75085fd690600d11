package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
	"github.com/spf13/cobra"
)

func init() { register(newQoSCmd) }

// qosSources are where qos and check read the system: sysfs, rtnetlink
// links and DCB. The hidden flags point them at fixtures (tests, or a
// system captured elsewhere).
type qosSources struct {
	sysfs string // sysfs root
	links string // vlan.Snapshot JSON file instead of rtnetlink
	dcb   string // JSON array of qos.DCB instead of RTM_GETDCB
}

func (s *qosSources) flags(c *cobra.Command) {
	c.Flags().StringVar(&s.sysfs, "sysfs", gid.DefaultSysfsRoot, "sysfs root to read RDMA devices from")
	c.Flags().StringVar(&s.links, "links", "", "read netdevs from this vlan.Snapshot JSON file instead of rtnetlink")
	c.Flags().StringVar(&s.dcb, "dcb", "", "read DCB state from this JSON file (an array of DCB objects) instead of rtnetlink")
	for _, f := range []string{"sysfs", "links", "dcb"} {
		_ = c.Flags().MarkHidden(f)
	}
}

func (s *qosSources) snapshot() (*vlan.Snapshot, error) {
	if s.links != "" {
		return readLinks(s.links)
	}
	h, err := vlan.Open("")
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return h.Snapshot()
}

func (s *qosSources) readDCB(netdev string) (*qos.DCB, error) {
	if s.dcb == "" {
		if s.links != "" {
			// The netdevs come from a file: the running kernel's DCB
			// state is not theirs.
			return nil, nil
		}
		return qos.ReadDCB(netdev)
	}
	b, err := os.ReadFile(s.dcb)
	if err != nil {
		return nil, usagef("--dcb %q: %v: want a JSON array of DCB objects", s.dcb, pathErr(err))
	}
	var all []qos.DCB
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, usagef("--dcb %s: %v: want a JSON array of DCB objects", s.dcb, err)
	}
	for i := range all {
		if all[i].Netdev == netdev {
			if err := all[i].Validate(); err != nil {
				return nil, usagef("--dcb %s: %v", s.dcb, err)
			}
			return &all[i], nil
		}
	}
	return &qos.DCB{Netdev: netdev, Reason: fmt.Sprintf("%s has no DCB entry in %s", netdev, s.dcb)}, nil
}

func newQoSCmd() *cobra.Command {
	var src qosSources
	var netdev, dev, format string
	c := &cobra.Command{
		Use:   "qos [--netdev N | --dev D]",
		Short: "Show trust mode, dscp→prio, prio→tc, PFC, DCBX and VLAN QoS maps of RoCE netdevs",
		Long: `qos shows, for a netdev (or every port of an RDMA device, or every RDMA device),
what decides the priority of RoCE traffic: the port's DCB state read over
rtnetlink (trust mode, the APP table's dscp→prio, ETS prio→tc and bandwidth,
PFC enable bits and delay, DCBX mode) — what 'dcb pfc show', 'dcb app show'
and mlnx_qos print — and the egress/ingress QoS maps of every VLAN device
above the real device. DCB is read from the real device under VLAN devices;
a netdev without DCB support (veth, rxe's netdev) shows "no DCB".
Needs no privileges.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(format, "table", "json")
			if err != nil {
				return err
			}
			if netdev != "" && dev != "" {
				return usagef("--netdev %q and --dev %q: give one or neither", netdev, dev)
			}
			snap, err := src.snapshot()
			if err != nil {
				return err
			}
			if netdev != "" {
				if err := checkNetdev("--netdev", netdev, snap, src.links); err != nil {
					return err
				}
			}
			if dev != "" {
				if err := checkRDMADevice(src.sysfs, dev); err != nil {
					return err
				}
			}
			var reports []qos.Report
			add := func(nd, device string, port int, info *qos.DriverInfo) error {
				desc, err := snap.Describe(nd)
				if err != nil {
					return usageError{err}
				}
				d, err := src.readDCB(desc.Real)
				if err != nil {
					return err
				}
				r, err := qos.NewReport(snap, nd, d)
				if err != nil {
					return usageError{err}
				}
				r.Device, r.Port, r.Driver = device, port, info
				reports = append(reports, r)
				return nil
			}
			if netdev != "" {
				if err := add(netdev, "", 0, nil); err != nil {
					return err
				}
			} else {
				sys := &gid.Sysfs{Root: src.sysfs}
				devs := []string{dev}
				if dev == "" {
					if devs, err = sys.Devices(); errors.Is(err, gid.ErrNoDevices) {
						return usagef("no RDMA devices under %s: name a netdev with --netdev", filepath.Join(src.sysfs, "class", "infiniband"))
					} else if err != nil {
						return err
					}
				}
				for _, d := range devs {
					info, err := qos.DetectDriver(src.sysfs, d)
					if err != nil {
						return err
					}
					ports, err := sys.Ports(d)
					if err != nil {
						return usageError{err}
					}
					for _, p := range ports {
						pp, err := sys.ReadPort(d, p)
						if err != nil {
							return err
						}
						if pp.LinkLayer != "Ethernet" || pp.Netdev == "" {
							continue
						}
						if err := add(pp.Netdev, d, p, &info); err != nil {
							return err
						}
					}
				}
			}
			if f == "json" {
				return writeJSONIndent(cmd.OutOrStdout(), reports)
			}
			for i, r := range reports {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				printQoSReport(cmd.OutOrStdout(), r)
			}
			return nil
		},
	}
	c.Flags().StringVar(&netdev, "netdev", "", "netdev to show (DCB is read from its real device)")
	c.Flags().StringVar(&dev, "dev", "", "RDMA device: show the netdev of each of its Ethernet ports")
	c.Flags().StringVarP(&format, "output", "o", "table", "output format: table or json")
	src.flags(c)
	return c
}

func printQoSReport(w io.Writer, r qos.Report) {
	head := r.Netdev
	if r.Real != r.Netdev {
		head += " (real device " + r.Real + ")"
	}
	if r.Device != "" {
		head = fmt.Sprintf("%s port %d: %s", r.Device, r.Port, head)
		if r.Driver != nil {
			head += fmt.Sprintf(", driver %s", r.Driver.Driver)
		}
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	d := r.DCB
	switch {
	case d == nil:
		fmt.Fprintf(tw, "  DCB:\tnot read\n")
	case !d.Supported:
		fmt.Fprintf(tw, "  DCB:\tno DCB: %s\n", d.Reason)
	default:
		dcbx := r.DCBX
		if dcbx == "" {
			dcbx = "not reported"
		}
		fmt.Fprintf(tw, "  DCBX mode:\t%s\n", dcbx)
		fmt.Fprintf(tw, "  trust:\t%s\n", r.Trust)
		var dp []string
		for dscp := 0; dscp < 64; dscp++ {
			for _, p := range r.DSCPPrio[uint8(dscp)] {
				dp = append(dp, fmt.Sprintf("%d:%d", dscp, p))
			}
		}
		if len(dp) == 0 {
			dp = []string{"none"}
		}
		fmt.Fprintf(tw, "  dscp-prio:\t%s\n", strings.Join(dp, " "))
		var other []string
		for _, a := range d.Apps {
			if a.Selector != qos.AppSelDSCP {
				other = append(other, fmt.Sprintf("sel %d proto %d → prio %d", a.Selector, a.Protocol, a.Priority))
			}
		}
		if len(other) > 0 {
			fmt.Fprintf(tw, "  other APP:\t%s\n", strings.Join(other, "; "))
		}
		if d.ETS != nil {
			var pt, tsa []string
			for p := 0; p < 8; p++ {
				pt = append(pt, fmt.Sprintf("%d:%d", p, d.ETS.PrioTC[p]))
				tsa = append(tsa, fmt.Sprintf("%d:%s/%d%%", p, qos.TSAName(d.ETS.TCTSA[p]), d.ETS.TCTxBW[p]))
			}
			fmt.Fprintf(tw, "  prio-tc:\t%s\n", strings.Join(pt, " "))
			fmt.Fprintf(tw, "  tc-tsa/bw:\t%s\n", strings.Join(tsa, " "))
		} else {
			fmt.Fprintf(tw, "  prio-tc:\tno ETS reported\n")
		}
		if d.PFC != nil {
			var pp []string
			for p := uint8(0); p < 8; p++ {
				st := "off"
				if d.PFC.On(p) {
					st = "on"
				}
				pp = append(pp, fmt.Sprintf("%d:%s", p, st))
			}
			fmt.Fprintf(tw, "  prio-pfc:\t%s (pfc-cap %d, delay %d)\n", strings.Join(pp, " "), d.PFC.Cap, d.PFC.Delay)
			if d.PFC.Requests != [8]uint64{} || d.PFC.Indications != [8]uint64{} {
				var rq, in []string
				for p := 0; p < 8; p++ {
					rq = append(rq, fmt.Sprintf("%d:%d", p, d.PFC.Requests[p]))
					in = append(in, fmt.Sprintf("%d:%d", p, d.PFC.Indications[p]))
				}
				fmt.Fprintf(tw, "  pfc requests:\t%s\n", strings.Join(rq, " "))
				fmt.Fprintf(tw, "  pfc indications:\t%s\n", strings.Join(in, " "))
			}
		} else {
			fmt.Fprintf(tw, "  prio-pfc:\tno PFC reported\n")
		}
	}
	if len(r.VLANs) == 0 {
		fmt.Fprintf(tw, "  VLAN devices:\tnone above %s\n", r.Real)
	} else {
		fmt.Fprintf(tw, "  VLAN devices:\n")
		for _, v := range r.VLANs {
			eg, in := v.Egress.String(), v.Ingress.String()
			if eg == "" {
				eg = "-"
			}
			if in == "" {
				in = "-"
			}
			fmt.Fprintf(tw, "    %s\t%s %d on %s\tegress-qos-map %s\tingress-qos-map %s\n", v.Netdev, v.Proto, v.ID, v.Lower, eg, in)
		}
	}
	tw.Flush()
}
