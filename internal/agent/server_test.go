package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/host"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// (PEM) into dir and returns their paths and the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "roce-probe agent test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "agent.crt"), filepath.Join(dir, "agent.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type answer struct {
	code int
	body string
	err  error
}

func get(c *http.Client, url, user, pass string) answer {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return answer{err: err}
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return answer{code: resp.StatusCode, body: string(b), err: err}
}

// The agent's endpoint with a web configuration file (the Prometheus
// exporters' format) serves over TLS only, and only to the user with the
// right password: no or wrong credentials get 401 with a
// WWW-Authenticate challenge (RFC 7617), plain HTTP on the TLS port gets
// no metrics, and a client that does not trust the certificate does not
// connect.
func TestServerTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret pass"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := writeFile(t, filepath.Join(dir, "web.yml"), "tls_server_config:\n  cert_file: "+filepath.Base(certFile)+
		"\n  key_file: "+filepath.Base(keyFile)+"\nbasic_auth_users:\n  prometheus: "+string(hash)+"\n")
	if err := CheckWebConfig(webCfg); err != nil {
		t.Fatalf("CheckWebConfig: %v", err)
	}
	cfg := testConfig()
	cfg.WebConfigFile = webCfg
	ta := startAgent(t, cfg, &fakeHost{}, newFakeNet())
	addr := strings.TrimPrefix(ta.url, "http://")
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	https := "https://" + addr

	for _, tc := range []struct {
		what, path, user, pass string
		code                   int
	}{
		{"no credentials", "/metrics", "", "", http.StatusUnauthorized},
		{"a wrong password", "/metrics", "prometheus", "s3cret", http.StatusUnauthorized},
		{"an unknown user", "/metrics", "admin", "s3cret pass", http.StatusUnauthorized},
		{"no credentials", "/healthz", "", "", http.StatusUnauthorized},
		{"no credentials", "/snapshot", "", "", http.StatusUnauthorized},
		{"the right password", "/metrics", "prometheus", "s3cret pass", http.StatusOK},
		{"the right password", "/healthz", "prometheus", "s3cret pass", http.StatusOK},
	} {
		a := get(client, https+tc.path, tc.user, tc.pass)
		if a.err != nil || a.code != tc.code {
			t.Errorf("%s with %s: %d %v, want %d", tc.path, tc.what, a.code, a.err, tc.code)
			continue
		}
		if tc.code == http.StatusOK && tc.path == "/metrics" && !strings.Contains(a.body, "\nroce_probe_") {
			t.Errorf("/metrics with the right password: no roce_probe_ series in %.200q", a.body)
		}
		if tc.code == http.StatusUnauthorized && strings.Contains(a.body, "roce_probe_") {
			t.Errorf("%s with %s: 401 with metrics in the body", tc.path, tc.what)
		}
	}
	// The challenge that makes a client send credentials.
	resp, err := client.Get(https + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Basic") {
		t.Errorf("401 without a Basic challenge: WWW-Authenticate %q", h)
	}

	// Plain HTTP to the TLS port: net/http's TLS server answers 400
	// ("Client sent an HTTP request to an HTTPS server") and nothing else.
	plain := get(&http.Client{Timeout: 10 * time.Second}, "http://"+addr+"/metrics", "prometheus", "s3cret pass")
	if plain.err == nil && (plain.code == http.StatusOK || strings.Contains(plain.body, "roce_probe_")) {
		t.Errorf("plain HTTP to the TLS port: %d %.200q, want no metrics", plain.code, plain.body)
	}
	if plain.err == nil && plain.code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS port: %d, want 400", plain.code)
	}
	// A client that does not trust the certificate.
	untrusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}}
	if a := get(untrusting, https+"/metrics", "prometheus", "s3cret pass"); a.err == nil {
		t.Errorf("a client without the certificate connected: %d", a.code)
	}
}

// startMLX5Agent runs an agent whose host is the mlx5 fixture
// (host/testdata/README.md) with /snapshot set to mode, and waits for
// its first read.
func startMLX5Agent(t *testing.T, mode string) *testAgent {
	t.Helper()
	cfg := testConfig()
	cfg.Snapshot = mode
	ta := startAgent(t, cfg, &fakeHost{}, newFakeNet(), func(d *Deps) {
		d.Collect = func(collect.Options) (*host.Snapshot, error) { return host.Load(hostTestdata + "mlx5.json") }
	})
	eventually(t, 10*time.Second, "first read", func() bool {
		return get(http.DefaultClient, ta.url+"/healthz", "", "").body != "" && ta.snap.Load() != nil
	})
	return ta
}

// snapshot off: /snapshot answers 404, /metrics and /healthz 200.
func TestSnapshotOff(t *testing.T) {
	ta := startMLX5Agent(t, SnapshotOff)
	c := &http.Client{Timeout: 10 * time.Second}
	if a := get(c, ta.url+"/snapshot", "", ""); a.err != nil || a.code != http.StatusNotFound || strings.Contains(a.body, "mlx5_0") {
		t.Errorf("/snapshot with snapshot off: %d %v %.200q, want 404 without the snapshot", a.code, a.err, a.body)
	}
	for _, p := range []string{"/metrics", "/healthz"} {
		if a := get(c, ta.url+p, "", ""); a.err != nil || a.code != http.StatusOK {
			t.Errorf("%s with snapshot off: %d %v, want 200", p, a.code, a.err)
		}
	}
}

// snapshot roce on the mlx5 fixture: the RDMA section whole, of the
// links those that carry a GID (enp1s0f0, enp1s0f0.100, mv0 on port 1,
// enp1s0f1 on port 2) — mv0 sits on enp1s0f0.100 on enp1s0f0 —, not lo
// nor docker0 ("not an upper device", host/testdata/README.md); no
// routes (the fixture has 17) and no neighbours. snapshot full serves
// the six links and 17 routes.
func TestSnapshotRoCE(t *testing.T) {
	c := &http.Client{Timeout: 10 * time.Second}
	read := func(mode string) *host.Snapshot {
		ta := startMLX5Agent(t, mode)
		a := get(c, ta.url+"/snapshot", "", "")
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("/snapshot (%s): %d %v %.200q", mode, a.code, a.err, a.body)
		}
		s, err := host.Decode(strings.NewReader(a.body))
		if err != nil {
			t.Fatalf("/snapshot (%s) does not decode: %v", mode, err)
		}
		return s
	}
	links := func(s *host.Snapshot) []string {
		var out []string
		for _, l := range s.Namespaces[0].Links {
			out = append(out, l.Name)
		}
		slices.Sort(out)
		return out
	}
	full, roce := read(SnapshotFull), read(SnapshotRoCE)
	if got, want := links(full), []string{"docker0", "enp1s0f0", "enp1s0f0.100", "enp1s0f1", "lo", "mv0"}; !slices.Equal(got, want) {
		t.Errorf("full: links %v, want %v", got, want)
	}
	if n := len(full.Namespaces[0].Routes); n != 17 {
		t.Errorf("full: %d routes, want the fixture's 17", n)
	}
	if got, want := links(roce), []string{"enp1s0f0", "enp1s0f0.100", "enp1s0f1", "mv0"}; !slices.Equal(got, want) {
		t.Errorf("roce: links %v, want %v", got, want)
	}
	ns := roce.Namespaces[0]
	if len(ns.Routes) != 0 || len(ns.Neighbors) != 0 {
		t.Errorf("roce: %d routes and %d neighbours, want none", len(ns.Routes), len(ns.Neighbors))
	}
	if roce.RDMA == nil || len(roce.RDMA.Devices) != 1 || roce.RDMA.Devices[0].Name != "mlx5_0" ||
		len(roce.RDMA.Devices[0].Ports) != 2 || len(roce.RDMA.Devices[0].Ports[0].GIDs) != len(full.RDMA.Devices[0].Ports[0].GIDs) {
		t.Errorf("roce: the RDMA section differs from full's")
	}
	if roce.Hostname != full.Hostname || roce.Kernel != full.Kernel {
		t.Errorf("roce: host %q kernel %q, want %q %q", roce.Hostname, roce.Kernel, full.Hostname, full.Kernel)
	}
	for _, l := range ns.Links {
		if l.Name == "mv0" && len(l.Addrs) == 0 {
			t.Errorf("roce: mv0 lost its addresses (its GIDs' source)")
		}
	}
}

// A web configuration file that cannot be used is a *ConfigError of
// web_config_file naming the file and what is wrong in the file's words
// (no Go type names).
func TestCheckWebConfig(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir)
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"unknown.yml", "tls_server_confg:\n  cert_file: x\n", []string{"tls_server_confg", "not found"}},
		{"nohash.yml", "basic_auth_users:\n  prometheus: plain-password\n", []string{"hash"}},
		{"nocert.yml", "tls_server_config:\n  cert_file: " + filepath.Join(dir, "missing.crt") + "\n  key_file: " + keyFile + "\n", []string{"missing.crt"}},
		{"nokey.yml", "tls_server_config:\n  cert_file: " + certFile + "\n", []string{"key"}},
		{"notyaml.yml", "tls_server_config: [\n", []string{"line"}},
	} {
		p := writeFile(t, filepath.Join(dir, tc.name), tc.content)
		err := CheckWebConfig(p)
		ce, ok := err.(*ConfigError)
		if !ok || ce.Field != "web_config_file" {
			t.Errorf("%s: %v (%T), want a ConfigError of web_config_file", tc.name, err, err)
			continue
		}
		msg := err.Error()
		for _, w := range append(tc.want, p) {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not say %q", tc.name, msg, w)
			}
		}
		if strings.Contains(msg, "web.Config") || strings.Contains(msg, "web.TLSConfig") || strings.Contains(msg, "in type") {
			t.Errorf("%s: %q names a Go type", tc.name, msg)
		}
	}
	if err := CheckWebConfig(filepath.Join(dir, "none.yml")); err == nil || !strings.Contains(err.Error(), "none.yml cannot be read") {
		t.Errorf("a missing file: %v", err)
	}
	if err := CheckWebConfig(""); err != nil {
		t.Errorf("no file: %v, want nil (plain HTTP)", err)
	}
}

// What fabric compares (fabric.FromSnapshot: the attachments, their
// usable GID indexes, VLANs, MTUs, QoS and settings) is the same from the
// RoCE sections as from the whole snapshot, for every fixture and for a
// host without RDMA devices (the predicted Soft-RoCE tables): `fabric
// --agents` works as well against snapshot roce.
func TestSnapshotRoCEKeepsFabric(t *testing.T) {
	names := []string{"rxe", "rxe-churned", "mlx5", "mlx5-dscp", "mlx5-pcp", "mlx5-counters", "mlx5-tcoverride", "no-rdma"}
	for _, name := range names {
		load := func() *host.Snapshot {
			file := name
			if name == "no-rdma" {
				file = "rxe"
			}
			s, err := host.Load(hostTestdata + file + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if name == "no-rdma" {
				s.RDMA = &host.RDMA{}
			}
			return s
		}
		full, err := fabric.FromSnapshot(load(), "agent")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := load()
		r := roceSections(s)
		roce, err := fabric.FromSnapshot(r, "agent")
		if err != nil {
			t.Fatalf("%s, roce sections: %v", name, err)
		}
		if len(full.Attachments) == 0 {
			t.Fatalf("%s: no attachments to compare", name)
		}
		if !reflect.DeepEqual(full, roce) {
			t.Errorf("%s: fabric's host differs:\n full %+v\n roce %+v", name, full, roce)
		}
		if n := len(s.Namespaces[0].Routes); n == 0 {
			t.Errorf("%s: roceSections emptied the snapshot it was given", name)
		}
		if n := len(r.Namespaces[0].Routes); n != 0 {
			t.Errorf("%s: roce sections with %d routes", name, n)
		}
		// What it answers is a snapshot that decodes.
		var b strings.Builder
		if err := r.Encode(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := host.Decode(strings.NewReader(b.String())); err != nil {
			t.Errorf("%s: the roce sections do not decode: %v", name, err)
		}
	}
}

// Any web configuration file is accepted or refused with a *ConfigError of
// web_config_file naming no Go type, never a panic (the parser is
// exporter-toolkit's; the messages are ours).
func FuzzCheckWebConfig(f *testing.F) {
	for _, s := range []string{"", "basic_auth_users:\n  u: $2a$04$abcdefghijklmnopqrstuuabcdefghijklmnopqrstuvwxyz01234\n",
		"tls_server_config:\n  cert_file: a\n", "tls_server_config: [1]\n", "rate_limit: {burst: x}\n", "http_server_config: {headers: {X-Frame-Options: no}}\n",
		"basic_auth_users: {a: [b]}\n", "tls_server_config:\n  client_auth_type: bogus\n  min_version: TLS9\n"} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "web.yml")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		err := CheckWebConfig(p)
		if err == nil {
			return
		}
		ce, ok := err.(*ConfigError)
		if !ok || ce.Field != "web_config_file" {
			t.Fatalf("%T %v: want a ConfigError of web_config_file", err, err)
		}
		if msg := err.Error(); strings.Contains(msg, "web.Config") || strings.Contains(msg, " in type ") {
			t.Fatalf("a Go type in %q", msg)
		}
	})
}
