package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/spf13/cobra"
)

func init() { register(newCheckCmd) }

func newCheckCmd() *cobra.Command {
	var src qosSources
	var dev, format, path string
	var port, index, tclass, sl, tos int
	var rdmaCM bool
	c := &cobra.Command{
		Use:   "check --dev D [--port P] --gid-index I (--tclass T --sl S | --tos T --rdma-cm)",
		Short: "Follow a flow's sl/traffic class (or rdma_cm ToS) to PCP, DSCP, ECN and a lossless verdict",
		Long: `check follows one RDMA flow from the address handle to the switch: the GID
entry's netdev and VLAN chain, the driver's rule for sl and traffic_class (or
rdma_cm's ToS → priority → SL), the PCP, DSCP and ECN on the wire, the priority
the port classifies it into under its trust mode, that priority's traffic class
and whether PFC protects it. Every step says why; warnings name the usual
misconfigurations (untagged traffic under PCP trust, a DSCP missing from the
APP table, ECN not ECT, an sl the driver ignores, a priority without PFC, an
rdma_cm priority without egress-map entry).

Exit status: 0 lossless, 1 lossy or unknown, 2 bad input. Needs no privileges.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(format, "table", "json")
			if err != nil {
				return err
			}
			fl := cmd.Flags()
			if dev == "" {
				return usagef("--dev is required: the RDMA device, e.g. mlx5_0 or rxe0")
			}
			if !fl.Changed("gid-index") {
				return usagef("--gid-index is required: the source GID index the application uses")
			}
			verbs := fl.Changed("tclass") || fl.Changed("sl")
			switch {
			case rdmaCM && verbs:
				return usagef("--rdma-cm takes --tos, not --tclass/--sl: rdma_cm derives sl and traffic class from the ToS")
			case rdmaCM && !fl.Changed("tos"):
				return usagef("--rdma-cm needs --tos T (0..255), the ToS set with rdma_set_option or default_roce_tos")
			case !rdmaCM && fl.Changed("tos"):
				return usagef("--tos is for rdma_cm flows: add --rdma-cm, or give --tclass and --sl for verbs")
			case !rdmaCM && !(fl.Changed("tclass") && fl.Changed("sl")):
				return usagef("give --tclass T --sl S (verbs address handle) or --tos T --rdma-cm")
			}
			var p qos.Path
			if path != "" {
				if p, err = qos.ParsePath(path); err != nil {
					return usagef("--path %q is not known: want user-ah, kernel-ah or connected-qp", path)
				}
			}
			if err := checkRDMADevice(src.sysfs, dev); err != nil {
				return err
			}
			info, err := qos.DetectDriver(src.sysfs, dev)
			if err != nil {
				return usagef("--dev %q: %v", dev, err)
			}
			if err := checkPort(src.sysfs, dev, port); err != nil {
				return err
			}
			sys := &gid.Sysfs{Root: src.sysfs}
			pp, err := sys.ReadPort(dev, port)
			if err != nil {
				return err
			}
			if index >= len(pp.Entries) {
				return usagef("--gid-index %d is out of range: %s port %d has GID indices 0..%d", index, dev, port, len(pp.Entries)-1)
			}
			e := pp.Entries[index]
			if e.Empty {
				return usagef("--gid-index %d is an empty GID slot on %s port %d: pick a populated index (roce-probe gids)", index, dev, port)
			}
			if e.Netdev == "" {
				return usagef("--gid-index %d on %s port %d has no readable netdev (it belongs to another network namespace?)", index, dev, port)
			}
			snap, err := src.snapshot()
			if err != nil {
				return err
			}
			link, err := qos.LinkFromSnapshot(snap, e.Netdev)
			if err != nil {
				return usagef("GID index %d's netdev %s: %v", index, e.Netdev, err)
			}
			d, err := src.readDCB(link.Real)
			if err != nil {
				return err
			}
			r, err := qos.Check(qos.Flow{
				Device: dev, Port: port, GIDIndex: index, GIDType: e.Type, Driver: info.Driver,
				Link: link, DCB: d, Path: p,
				SL: uint8(sl), TrafficClass: uint8(tclass), RDMACM: rdmaCM, TOS: uint8(tos),
			})
			if err != nil {
				return usageError{err}
			}
			if f == "json" {
				if err := writeJSONIndent(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else {
				printCheck(cmd.OutOrStdout(), r, info)
			}
			if r.Verdict != qos.Lossless {
				return findingError{}
			}
			return nil
		},
	}
	c.Flags().StringVar(&dev, "dev", "", "RDMA device, e.g. mlx5_0 or rxe0")
	fl := c.Flags()
	intVar(fl, &port, "port", 1, 1, 255, "port number (1..255)")
	intVar(fl, &index, "gid-index", 0, 0, 255, "source GID index (ibv_ah_attr.grh.sgid_index), 0..255")
	intVar(fl, &tclass, "tclass", 0, 0, 255, "traffic class of the AH (grh.traffic_class), 0..255")
	intVar(fl, &sl, "sl", 0, 0, 15, "service level of the AH, 0..15")
	intVar(fl, &tos, "tos", 0, 0, 255, "rdma_cm ToS, 0..255 (with --rdma-cm)")
	c.Flags().BoolVar(&rdmaCM, "rdma-cm", false, "the flow is set up by rdma_cm: sl and traffic class come from --tos")
	c.Flags().StringVar(&path, "path", "", "how the AV reaches the driver: user-ah (default for verbs), kernel-ah or connected-qp (default for rdma_cm)")
	c.Flags().StringVarP(&format, "output", "o", "table", "output format: table or json")
	src.flags(c)
	return c
}

func printCheck(w io.Writer, r qos.Result, info qos.DriverInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "flow:\t%s port %d GID index %d (%s) on %s, driver %s (%s)\n", r.Device, r.Port, r.Index, r.GIDType, r.Netdev, r.Driver, info.Evidence)
	vlanS := "untagged"
	if len(r.VLANChain) > 0 {
		var parts []string
		for _, t := range r.VLANChain {
			parts = append(parts, fmt.Sprintf("%s %d pcp %s", t.Proto, t.ID, ptrOr(t.PCP, "-", u8Text)))
		}
		vlanS = strings.Join(parts, " / ")
	}
	fmt.Fprintf(tw, "wire:\t%s, DSCP %s, ECN %s\n", vlanS, ptrOr(r.DSCP, "-", u8Text), ptrOr(r.ECN, "-", qos.ECN.String))
	pfc := "-"
	if r.PFC != nil {
		pfc = map[bool]string{true: "on", false: "off"}[*r.PFC]
	}
	fmt.Fprintf(tw, "port:\ttrust %s, priority %s, tc %s, pfc %s\n", r.Trust, ptrOr(r.Priority, "-", u8Text), ptrOr(r.TC, "-", u8Text), pfc)
	fmt.Fprintf(tw, "verdict:\t%s\n", strings.ToUpper(string(r.Verdict)))
	tw.Flush()
	for _, x := range r.Reasons {
		fmt.Fprintf(w, "  because: %s\n", x)
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	for _, x := range r.Unknowns {
		fmt.Fprintf(w, "  unknown: %s\n", x)
	}
	fmt.Fprintln(w, "\nsteps:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range r.Steps {
		fmt.Fprintf(tw, "  %d.\t%s\t%s\t%s\n", i+1, s.Step, s.Value, s.Why)
	}
	tw.Flush()
}
