// Command grafana-wrappers writes the Kubernetes wrappers of roce-probe's
// Grafana dashboards (deploy/grafana/*.json): a ConfigMap for
// kube-prometheus-stack's Grafana sidecar and a grafana-operator
// GrafanaDashboard for each (validate.DashboardWrappers), and removes the
// wrappers of dashboards that are gone. Run it after changing a dashboard:
//
//	cd deploy/validate && go generate
//
// The deploy/validate tests fail while the files differ from what it
// writes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/roce-probe/roce-probe/deploy/validate"
)

func main() {
	dir := flag.String("dir", filepath.Join("..", "grafana"), "the dashboards' directory (deploy/grafana)")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "grafana-wrappers:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := validate.DashboardWrappers(dir)
	if err != nil {
		return err
	}
	for _, sub := range []string{validate.SidecarDir, validate.OperatorDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
		old, err := filepath.Glob(filepath.Join(dir, sub, "*.yaml"))
		if err != nil {
			return err
		}
		for _, f := range old {
			rel, _ := filepath.Rel(dir, f)
			if _, keep := files[rel]; !keep {
				if err := os.Remove(f); err != nil {
					return err
				}
				fmt.Println("removed", f)
			}
		}
	}
	for rel, b := range files {
		f := filepath.Join(dir, rel)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", f)
	}
	return nil
}
