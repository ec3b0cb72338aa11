// Command pulumi-language-python is a small Pulumi language host for Python programs.
//
// The upstream host lives in a Go module that the module proxy on our machines does not
// serve, so we ship our own. It implements what `pulumi preview/up/destroy/refresh` need:
// it runs the program through `pulumi-language-python-exec` (taken at build time from the
// served sdk/v3 module, installed next to this binary) with the interpreter of the
// project's virtualenv, and reports failures the way the engine expects.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	pbempty "google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.0.0-dev"

// bailExitCode is what pulumi-language-python-exec exits with after it has already
// shown the user an actionable error; the engine must not print a second one.
const bailExitCode = 32

func main() {
	// The engine passes its own address as the only positional argument; older engines
	// also pass flags we accept and ignore.
	flag.String("tracing", "", "ignored: tracing endpoint")
	flag.String("root", "", "ignored: project root")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: pulumi-language-python ENGINE_ADDRESS")
		os.Exit(2)
	}
	engineAddress := flag.Arg(0)

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot locate own executable: %v\n", err)
		os.Exit(1)
	}
	host := &languageHost{
		engineAddress: engineAddress,
		execScript:    filepath.Join(filepath.Dir(self), "pulumi-language-python-exec"),
	}

	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
		Options: rpcutil.OpenTracingServerInterceptorOptions(nil),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "could not start the language host: %v\n", err)
		os.Exit(1)
	}
	// The engine reads the port from our first line of output.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "language host stopped: %v\n", err)
		os.Exit(1)
	}
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	engineAddress string
	execScript    string
}

func (h *languageHost) Handshake(
	_ context.Context, _ *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *pbempty.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// GetRequiredPlugins reports nothing: providers are loaded when the program first
// registers a resource of theirs, from PATH or the plugin cache, never downloaded.
func (h *languageHost) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *languageHost) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *languageHost) GetProgramDependencies(
	context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *languageHost) RuntimeOptionsPrompts(
	context.Context, *pulumirpc.RuntimeOptionsRequest,
) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

func (h *languageHost) About(_ context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	python := pythonCommand(req.GetInfo())
	out, err := exec.Command(python, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("running %s --version: %w", python, err)
	}
	return &pulumirpc.AboutResponse{Executable: python, Version: string(out)}, nil
}

func (h *languageHost) InstallDependencies(
	*pulumirpc.InstallDependenciesRequest, grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	return status.Error(codes.Unimplemented,
		"this language host does not install dependencies: run `make venv` in the project")
}

// Run executes the program and waits for it. A program error is returned in the
// response (not as an RPC error), as the engine expects.
func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	program := req.GetProgram()
	if info != nil && info.GetProgramDirectory() != "" {
		program = info.GetProgramDirectory()
	}
	args := []string{"-u", h.execScript,
		"--monitor", req.GetMonitorAddress(),
		"--engine", h.engineAddress,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--dry_run", strconv.FormatBool(req.GetDryRun()),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
		"--organization", req.GetOrganization(),
	}
	if info != nil && info.GetRootDirectory() != "" {
		args = append(args, "--root_directory", info.GetRootDirectory())
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	config := req.GetConfig()
	if config == nil {
		config = map[string]string{} // the exec script expects an object, never null
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}

	cmd := exec.CommandContext(ctx, pythonCommand(info), args...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(),
		"PULUMI_CONFIG="+string(configJSON),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
	)
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if exitErr.ExitCode() == bailExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("the Python program exited with code %d", exitErr.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// pythonCommand picks the interpreter: the project's `virtualenv` runtime option
// (relative to the project root), then PULUMI_PYTHON_CMD, then python3.
func pythonCommand(info *pulumirpc.ProgramInfo) string {
	if info != nil {
		if venv, ok := info.GetOptions().AsMap()["virtualenv"].(string); ok && venv != "" {
			if !filepath.IsAbs(venv) {
				venv = filepath.Join(info.GetRootDirectory(), venv)
			}
			return filepath.Join(venv, "bin", "python")
		}
	}
	if cmd := os.Getenv("PULUMI_PYTHON_CMD"); cmd != "" {
		return cmd
	}
	return "python3"
}
