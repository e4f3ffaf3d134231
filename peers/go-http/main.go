// go-http: the five routes of crates/handlers on Go's net/http (a goroutine per connection,
// GOMAXPROCS = the CPUs it may use), keep-alive, TCP_NODELAY (Go's default). SHA-256 is Go's
// crypto/sha256, which uses the CPU's SHA extensions where it has them: not the portable code the
// Rust builds run. `go-http --port 0 --upstream http://127.0.0.1:9000` prints
// `listening on http://ADDR` once bound.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
)

const (
	textPlain    = "text/plain; charset=utf-8"
	octetStream  = "application/octet-stream"
	defaultIters = 20000
	maxIters     = 10000000
)

var (
	seed   = []byte("wasmlab")
	routes = map[string]string{"/": "GET", "/compute": "GET", "/state": "GET", "/proxy": "GET", "/echo": "POST"}
	digits = regexp.MustCompile(`^\+?[0-9]{1,10}$`)
)

// chainedSha256Hex: state = seed; repeat iters times: state = sha256(state); lowercase hex.
func chainedSha256Hex(iters int) string {
	if iters == 0 {
		return hex.EncodeToString(seed)
	}
	d := sha256.Sum256(seed)
	for i := 1; i < iters; i++ {
		d = sha256.Sum256(d[:])
	}
	return hex.EncodeToString(d[:])
}

type server struct {
	counter  atomic.Uint64
	upstream string
	client   *http.Client
}

func reply(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("content-type", contentType)
	h.Set("content-length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	allowed, ok := routes[r.URL.Path]
	if !ok {
		reply(w, 404, textPlain, []byte("not found"))
		return
	}
	if r.Method != allowed {
		w.Header().Set("allow", allowed)
		reply(w, 405, textPlain, []byte("method not allowed"))
		return
	}
	switch r.URL.Path {
	case "/":
		reply(w, 200, textPlain, []byte("hello"))
	case "/compute":
		iters := defaultIters
		if v, given := r.URL.Query()["iters"]; given {
			n, err := strconv.Atoi(strings.TrimPrefix(v[0], "+"))
			if !digits.MatchString(v[0]) || err != nil || n > maxIters {
				reply(w, 400, textPlain, []byte(fmt.Sprintf("iters must be an integer in 0..=%d", maxIters)))
				return
			}
			iters = n
		}
		reply(w, 200, textPlain, []byte(chainedSha256Hex(iters)))
	case "/state":
		reply(w, 200, textPlain, []byte(strconv.FormatUint(s.counter.Add(1), 10)))
	case "/proxy":
		body, err := s.proxy(r.URL.RequestURI())
		if err != nil {
			reply(w, 502, textPlain, []byte("upstream error: "+err.Error()))
			return
		}
		reply(w, 200, octetStream, body)
	case "/echo":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			reply(w, 400, textPlain, []byte("could not read the request body: "+err.Error()))
			return
		}
		reply(w, 200, octetStream, body)
	}
}

func (s *server) proxy(target string) ([]byte, error) {
	if s.upstream == "" {
		return nil, fmt.Errorf("no upstream configured")
	}
	resp, err := s.client.Get(s.upstream + target)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to bind")
	port := flag.Int("port", 8080, "port to bind (0: an ephemeral one)")
	upstream := flag.String("upstream", "", "base URL /proxy forwards to")
	flag.Parse()
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-http:", err)
		os.Exit(2)
	}
	// Keep-alive to the upstream for every concurrent /proxy, as the gateways keep theirs.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 1024
	s := &server{upstream: strings.TrimSuffix(*upstream, "/"), client: &http.Client{Transport: transport}}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := http.Serve(ln, s); err != nil {
		fmt.Fprintln(os.Stderr, "go-http:", err)
		os.Exit(1)
	}
}
