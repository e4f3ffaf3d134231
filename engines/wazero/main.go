// wasmlab-engine-wazero: the wasmlab runner for wazero (docs/engines.md).
//
//	wasmlab-engine-wazero --version
//	wasmlab-engine-wazero [--config compiler|interpreter] --phases FILE MODULE.wasm [ARG...]
//
// Runs a WASI preview 1 command module to completion and writes its phase
// times (compile, instantiate, execute) as JSON to FILE.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

const (
	wazeroPath = "github.com/tetratelabs/wazero"
	usage      = "usage: wasmlab-engine-wazero --version\n" +
		"       wasmlab-engine-wazero [--config compiler|interpreter] --phases FILE MODULE.wasm [ARG...]\n"
	exitUsage   = 2  // bad command line, unknown --config
	exitProgram = 70 // the program failed while running: a trap
	exitRunner  = 71 // the runner failed: reading, compiling, instantiating, writing the phases
)

// configs maps --config names to wazero runtime configurations; defaultConfig is used without --config.
var configs = map[string]func() wazero.RuntimeConfig{
	"compiler":    wazero.NewRuntimeConfigCompiler,
	"interpreter": wazero.NewRuntimeConfigInterpreter,
}

const defaultConfig = "compiler"

func main() {
	os.Exit(run(os.Args[1:]))
}

func fail(code int, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "wasmlab-engine-wazero: "+format+"\n", args...)
	return code
}

// wazeroVersion is the version of the wazero module linked into this binary.
func wazeroVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path != wazeroPath {
				continue
			}
			if dep.Replace != nil && dep.Replace.Version != "" {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}

func run(args []string) int {
	configName := defaultConfig
	phasesFile := ""
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			break
		}
		name, value, hasValue := strings.Cut(arg, "=")
		switch name {
		case "--version":
			fmt.Printf("wazero %s\n", wazeroVersion())
			return 0
		case "-h", "--help":
			fmt.Print(usage)
			return 0
		case "--config", "--phases":
			if !hasValue {
				if i+1 >= len(args) {
					fmt.Fprint(os.Stderr, usage)
					return fail(exitUsage, "%s needs a value", name)
				}
				i++
				value = args[i]
			}
			if name == "--config" {
				configName = value
			} else {
				phasesFile = value
			}
		default:
			fmt.Fprint(os.Stderr, usage)
			return fail(exitUsage, "unknown option %q", arg)
		}
	}
	newConfig, ok := configs[configName]
	if !ok {
		return fail(exitUsage, "unknown --config %q (known: compiler, interpreter)", configName)
	}
	if i >= len(args) {
		fmt.Fprint(os.Stderr, usage)
		return fail(exitUsage, "no module given")
	}
	if phasesFile == "" {
		fmt.Fprint(os.Stderr, usage)
		return fail(exitUsage, "--phases FILE is required")
	}
	modulePath := args[i]
	programArgs := append([]string{filepath.Base(modulePath)}, args[i+1:]...)

	wasm, err := os.ReadFile(modulePath) // not timed
	if err != nil {
		return fail(exitRunner, "%v", err)
	}

	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, newConfig())

	// compile: validation and compilation (for the interpreter, its translation).
	t0 := time.Now()
	compiled, err := r.CompileModule(ctx, wasm)
	compileNs := time.Since(t0).Nanoseconds()
	if err != nil {
		return fail(exitRunner, "compile: %v", err)
	}

	// instantiate: the WASI host module, the module config (WASI context), linking, instantiation.
	// _start is not run here (WithStartFunctions with no names) but called below.
	t1 := time.Now()
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	modConfig := wazero.NewModuleConfig().
		WithStartFunctions().
		WithArgs(programArgs...).
		WithFSConfig(wazero.NewFSConfig().WithDirMount(".", ".")).
		WithStdout(os.Stdout).
		WithStderr(os.Stderr). // stdin: none given, reads return EOF
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader)
	mod, err := r.InstantiateModule(ctx, compiled, modConfig)
	instantiateNs := time.Since(t1).Nanoseconds()
	if err != nil {
		// A Wasm start section may call proc_exit: that is the program exiting.
		var exitErr *sys.ExitError
		if errors.As(err, &exitErr) {
			return finish(phasesFile, compileNs, instantiateNs, 0, int(exitErr.ExitCode()))
		}
		return fail(exitRunner, "instantiate: %v", err)
	}
	start := mod.ExportedFunction("_start")
	if start == nil {
		return fail(exitRunner, "module has no exported function _start")
	}

	// execute: the call of _start until it returns or the program exits.
	t2 := time.Now()
	_, err = start.Call(ctx)
	executeNs := time.Since(t2).Nanoseconds()
	code := 0
	if err != nil {
		var exitErr *sys.ExitError
		if !errors.As(err, &exitErr) {
			return fail(exitProgram, "trap: %v", err)
		}
		code = int(exitErr.ExitCode())
	}
	return finish(phasesFile, compileNs, instantiateNs, executeNs, code)
}

// finish writes the phases file and returns the program's exit code: its low 8 bits, as the
// kernel keeps of a native program's status.
func finish(phasesFile string, compileNs, instantiateNs, executeNs int64, code int) int {
	data := fmt.Sprintf("{\"compile_ns\": %d, \"instantiate_ns\": %d, \"execute_ns\": %d}\n",
		compileNs, instantiateNs, executeNs)
	if err := os.WriteFile(phasesFile, []byte(data), 0o644); err != nil {
		return fail(exitRunner, "writing phases: %v", err)
	}
	return code & 0xff
}
