// wazero-gateway: a Go net/http server that runs wasmlab's core-module guest through wazero, as a
// Go service embedding Wasm for plugins does: the module compiled once (wazero's compiler), a
// fresh instance of it per request (or, with --reuse, instances kept and reused as they are, as a
// plugin host that pools them does), the host's imports of docs/guest-abi.md (module `wasmlab`)
// given by Go, so that its row compares hosts on one guest with wasmtime-pooled (wasmtime-shared).
//
//	wazero-gateway --port 0 --upstream http://127.0.0.1:9000 --wasm GUEST.wasm [--reuse]
//
// prints `listening on http://ADDR` once bound. The limits are the Rust gateway's where wazero has
// them: 1 MiB of request body (413 past it), 10 s a request (504, --deadline-ms), 16 MiB of guest memory, at
// most --max-instances instances at once (128) with up to --max-queue requests (10,000) waiting
// up to 10 s for one (503 past either), and a response the host cannot check answers 500 with the
// reason in the log.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

const (
	wazeroPath   = "github.com/tetratelabs/wazero"
	maxBody      = 1 << 20
	queueTimeout = 10 * time.Second
	memoryPages  = 256 // 16 MiB
	descriptorSz = 20
)

// request is one request's side of the imports: what the guest reads, and its last upstream answer.
type request struct {
	method, target string
	body           []byte
	upstream       []byte
}

type requestKey struct{}

type gateway struct {
	deadline time.Duration
	runtime  wazero.Runtime
	module   wazero.CompiledModule
	counter  atomic.Int64
	upstream string
	client   *http.Client
	failures atomic.Uint64
	// One token per instance that may live at once; requests waiting for one, at most maxQueue.
	slots    chan struct{}
	waiting  atomic.Int64
	maxQueue int64
	// With --reuse, the instances between requests (none without): a request takes one or
	// instantiates, and gives it back unless its call failed.
	idle chan api.Module
}

func reqOf(ctx context.Context) *request { return ctx.Value(requestKey{}).(*request) }

// imports instantiates the host module `wasmlab`: the handler ABI's imports, per request through the
// context each call carries.
func (g *gateway) imports(ctx context.Context) error {
	_, err := g.runtime.NewHostModuleBuilder("wasmlab").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, out uint32) {
		r := reqOf(ctx)
		var b [12]byte
		binary.LittleEndian.PutUint32(b[0:], uint32(len(r.method)))
		binary.LittleEndian.PutUint32(b[4:], uint32(len(r.target)))
		binary.LittleEndian.PutUint32(b[8:], uint32(len(r.body)))
		if !m.Memory().Write(out, b[:]) {
			panic("request_sizes: out of the guest's memory")
		}
	}).Export("request_sizes").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, method, target, body uint32) {
		r := reqOf(ctx)
		mem := m.Memory()
		if !mem.WriteString(method, r.method) || !mem.WriteString(target, r.target) || !mem.Write(body, r.body) {
			panic("request_read: out of the guest's memory")
		}
	}).Export("request_read").
		NewFunctionBuilder().WithFunc(func(ctx context.Context) int64 {
		return g.counter.Add(1)
	}).Export("state_increment").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, ptr, n uint32) int64 {
		r := reqOf(ctx)
		target, ok := m.Memory().Read(ptr, n)
		if !ok {
			panic("proxy_get: out of the guest's memory")
		}
		body, err := g.proxy(string(target))
		if err != nil {
			r.upstream = []byte(err.Error())
			return -int64(len(r.upstream)) - 1
		}
		r.upstream = body
		return int64(len(body))
	}).Export("proxy_get").
		NewFunctionBuilder().WithFunc(func(ctx context.Context, m api.Module, dst, n uint32) uint32 {
		r := reqOf(ctx)
		take := r.upstream
		if uint32(len(take)) > n {
			take = take[:n]
		}
		if !m.Memory().Write(dst, take) {
			panic("proxy_take: out of the guest's memory")
		}
		return uint32(len(take))
	}).Export("proxy_take").
		Instantiate(ctx)
	return err
}

func (g *gateway) proxy(target string) ([]byte, error) {
	if g.upstream == "" {
		return nil, errors.New("no upstream configured")
	}
	resp, err := g.client.Get(g.upstream + target)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the upstream answered %d", resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

// response is what the guest answered, checked as the Rust gateway checks it.
type response struct {
	status  int
	headers [][2]string
	body    []byte
}

// framing headers are the host's to set: dropped from the guest's (docs/guest-abi.md).
var framing = map[string]bool{"content-length": true, "transfer-encoding": true, "trailer": true,
	"connection": true, "keep-alive": true, "upgrade": true, "te": true}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

func readResponse(mem api.Memory, at uint32) (*response, error) {
	d, ok := mem.Read(at, descriptorSz)
	if !ok {
		return nil, fmt.Errorf("the response descriptor at %d is outside the memory", at)
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(d[4*i:]) }
	status := int(word(0))
	if status < 200 || status > 999 {
		return nil, fmt.Errorf("status %d is not a final HTTP status", status)
	}
	head, ok := mem.Read(word(1), word(2))
	if !ok {
		return nil, errors.New("the headers lie outside the memory")
	}
	body, ok := mem.Read(word(3), word(4))
	if !ok {
		return nil, errors.New("the body lies outside the memory")
	}
	r := &response{status: status, body: bytes.Clone(body)}
	for _, line := range strings.Split(strings.TrimSuffix(string(head), "\n"), "\n") {
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ": ")
		if !ok || !isToken(name) {
			return nil, fmt.Errorf("header line %q is not `name: value`", line)
		}
		for i := 0; i < len(value); i++ {
			if value[i] < ' ' || value[i] >= 0x7f {
				return nil, fmt.Errorf("header %s has a byte that is not visible ASCII", name)
			}
		}
		lower := strings.ToLower(name)
		if framing[lower] || strings.HasPrefix(lower, "proxy-") {
			continue
		}
		r.headers = append(r.headers, [2]string{name, value})
	}
	return r, nil
}

func plain(w http.ResponseWriter, status int, text string) {
	w.Header().Set("content-type", "text/plain; charset=utf-8")
	w.Header().Set("content-length", strconv.Itoa(len(text)))
	w.WriteHeader(status)
	io.WriteString(w, text)
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, hr.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			plain(w, http.StatusRequestEntityTooLarge, "request body too large")
		} else {
			plain(w, http.StatusBadRequest, "could not read the request body")
		}
		return
	}
	if !g.acquire(hr.Context()) {
		plain(w, http.StatusServiceUnavailable, "no instance free")
		return
	}
	defer func() { <-g.slots }()
	r := &request{method: hr.Method, target: hr.URL.RequestURI(), body: body}
	ctx, cancel := context.WithTimeout(context.WithValue(hr.Context(), requestKey{}, r), g.deadline)
	defer cancel()
	resp, err := g.handle(ctx)
	if err != nil {
		n := g.failures.Add(1)
		var exit *sys.ExitError
		status := http.StatusInternalServerError
		if errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded {
			status = http.StatusGatewayTimeout
		}
		fmt.Fprintf(os.Stderr, "wazero-gateway: request %d: %s %s: %d guest failed: %v\n", n, r.method, r.target, status, err)
		plain(w, status, fmt.Sprintf("the handler failed (request %d)", n))
		return
	}
	h := w.Header()
	for _, kv := range resp.headers {
		h.Add(kv[0], kv[1])
	}
	h.Set("content-length", strconv.Itoa(len(resp.body)))
	w.WriteHeader(resp.status)
	w.Write(resp.body)
}

// acquire takes an instance's slot: at once if one is free, else waiting up to queueTimeout
// among at most maxQueue others; false when neither.
func (g *gateway) acquire(ctx context.Context) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if g.waiting.Add(1) > g.maxQueue {
		g.waiting.Add(-1)
		return false
	}
	defer g.waiting.Add(-1)
	timer := time.NewTimer(queueTimeout)
	defer timer.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// handle runs the request in an instance of the compiled module: a fresh one, closed after it;
// with --reuse, a kept one if any, given back after a call that returned (one that trapped, ran
// out of time or answered what the host could not read is closed).
func (g *gateway) handle(ctx context.Context) (*response, error) {
	var mod api.Module
	select {
	case mod = <-g.idle:
	default:
		// An unnamed instance: any number may live at once, one per request in flight.
		var err error
		mod, err = g.runtime.InstantiateModule(ctx, g.module, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			return nil, err
		}
	}
	resp, err := call(ctx, mod)
	if err != nil || g.idle == nil {
		mod.Close(context.Background())
		return resp, err
	}
	select {
	case g.idle <- mod:
	default:
		mod.Close(context.Background())
	}
	return resp, nil
}

func call(ctx context.Context, mod api.Module) (*response, error) {
	handle := mod.ExportedFunction("wasmlab_handle")
	if handle == nil {
		return nil, errors.New("the module exports no wasmlab_handle")
	}
	out, err := handle.Call(ctx)
	if err != nil {
		return nil, err
	}
	return readResponse(mod.Memory(), uint32(out[0]))
}

func wazeroVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == wazeroPath {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to bind")
	port := flag.Int("port", 8080, "port to bind (0: an ephemeral one)")
	upstream := flag.String("upstream", "", "base URL the guest's proxy_get reaches")
	wasm := flag.String("wasm", "", "the core-module guest (docs/guest-abi.md)")
	version := flag.Bool("version", false, "print wazero's version and exit")
	reuse := flag.Bool("reuse", false, "keep instances and reuse them as they are (no isolation between requests)")
	maxInstances := flag.Int("max-instances", 128, "instances alive at once")
	maxQueue := flag.Int64("max-queue", 10_000, "requests that may wait for an instance; more are answered 503")
	deadlineMs := flag.Int64("deadline-ms", 10_000, "longest a request may run in the guest before 504")
	flag.Parse()
	if *version {
		fmt.Println("wazero-gateway, wazero", wazeroVersion())
		return
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "wazero-gateway: "+format+"\n", args...)
		os.Exit(2)
	}
	if *maxInstances < 1 || *maxQueue < 0 || *deadlineMs < 1 {
		fail("--max-instances and --deadline-ms must be 1 or more, --max-queue 0 or more (given %d, %d, %d)", *maxInstances, *deadlineMs, *maxQueue)
	}
	code, err := os.ReadFile(*wasm)
	if err != nil {
		fail("--wasm: %v", err)
	}
	ctx := context.Background()
	config := wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(memoryPages).
		WithCloseOnContextDone(true)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 1024
	g := &gateway{
		deadline: time.Duration(*deadlineMs) * time.Millisecond,
		runtime:  wazero.NewRuntimeWithConfig(ctx, config),
		upstream: strings.TrimSuffix(*upstream, "/"),
		client:   &http.Client{Transport: transport},
		slots:    make(chan struct{}, *maxInstances),
		maxQueue: *maxQueue,
	}
	if *reuse {
		g.idle = make(chan api.Module, *maxInstances)
	}
	if err := g.imports(ctx); err != nil {
		fail("the host module: %v", err)
	}
	if g.module, err = g.runtime.CompileModule(ctx, code); err != nil {
		fail("compiling %s: %v", *wasm, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fail("%v", err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := http.Serve(ln, g); err != nil {
		fail("%v", err)
	}
}
