// streamclient: pods/exec and pods/portforward through client-go's own executors and dialers, for
// localkube's tests (tests/conformance/test_clientgo_streams.py). scripts/tools/streamclient/build builds it once
// into the tool cache, against the client-go release of scripts/tools/gobuild.sh's kubernetes_version.
//
//	streamclient -kubeconfig K -namespace N -pod P -transport spdy|websocket [-stdin TEXT] \
//	    [-tty -columns C -rows R] exec -- COMMAND...
//	streamclient -kubeconfig K -namespace N -pod P -transport spdy|websocket portforward -port PORT \
//	    [-connections N] -send TEXT
//
// "spdy" is remotecommand.NewSPDYExecutor and spdy.NewDialer (SPDY/3.1 upgrades); "websocket" is
// remotecommand.NewWebSocketExecutor and portforward.NewSPDYOverWebsocketDialer (kubectl's defaults).
// It prints one JSON object: exec {"stdout", "stderr", "exitCode", "error"}; portforward {"responses",
// "error"}, a response per connection, made one after another through one forwarder.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
)

type execResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error"`
}

type forwardResult struct {
	Responses []string `json:"responses"`
	Error     string   `json:"error"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig of the cluster")
	namespace := flag.String("namespace", "default", "the pod's namespace")
	pod := flag.String("pod", "", "the pod")
	container := flag.String("container", "", "the container (exec)")
	transport := flag.String("transport", "spdy", "spdy or websocket")
	stdin := flag.String("stdin", "", "what exec sends on stdin (none when empty)")
	tty := flag.Bool("tty", false, "exec on a terminal (its output on stdout)")
	columns := flag.Uint("columns", 80, "the terminal's width, sent once (with -tty)")
	rows := flag.Uint("rows", 24, "the terminal's height, sent once (with -tty)")
	port := flag.Int("port", 0, "the pod's port (portforward)")
	connections := flag.Int("connections", 1, "connections made through the forwarder, one after another")
	send := flag.String("send", "", "what each forwarded connection sends before half-closing")
	timeout := flag.Duration("timeout", 60*time.Second, "the bound of the whole run")
	flag.Parse()
	if flag.NArg() < 1 || (*transport != "spdy" && *transport != "websocket") {
		fmt.Fprintln(os.Stderr, "usage: streamclient FLAGS exec -- COMMAND... | streamclient FLAGS portforward")
		os.Exit(2)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var result any
	switch flag.Arg(0) {
	case "exec":
		command := flag.Args()[1:]
		if len(command) > 0 && command[0] == "--" {
			command = command[1:]
		}
		var size *remotecommand.TerminalSize
		if *tty {
			size = &remotecommand.TerminalSize{Width: uint16(*columns), Height: uint16(*rows)}
		}
		result = runExec(ctx, config, client, *namespace, *pod, *container, *transport, *stdin, size, command)
	case "portforward":
		result = runForward(ctx, config, client, *namespace, *pod, *transport, *port, *connections, *send)
	default:
		fail(fmt.Errorf("unknown command %q", flag.Arg(0)))
	}
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// onceSize is a TerminalSizeQueue that gives one size, then ends.
type onceSize struct{ size *remotecommand.TerminalSize }

func (q *onceSize) Next() *remotecommand.TerminalSize {
	size := q.size
	q.size = nil
	return size
}

// runExec runs the command; on a terminal of `size` when that is not nil.
func runExec(ctx context.Context, config *rest.Config, client kubernetes.Interface, namespace, pod, container,
	transport, stdin string, size *remotecommand.TerminalSize, command []string) execResult {
	tty := size != nil
	request := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: container, Command: command, Stdin: stdin != "", Stdout: true, Stderr: !tty, TTY: tty,
	}, scheme.ParameterCodec)
	var executor remotecommand.Executor
	var err error
	if transport == "spdy" {
		executor, err = remotecommand.NewSPDYExecutor(config, "POST", request.URL())
	} else {
		executor, err = remotecommand.NewWebSocketExecutor(config, "GET", request.URL().String())
	}
	if err != nil {
		return execResult{Error: err.Error(), ExitCode: -1}
	}
	var stdout, stderr bytes.Buffer
	options := remotecommand.StreamOptions{Stdout: &stdout}
	if tty {
		options.Tty = true
		options.TerminalSizeQueue = &onceSize{size: size}
	} else {
		options.Stderr = &stderr
	}
	if stdin != "" {
		options.Stdin = strings.NewReader(stdin)
	}
	err = executor.StreamWithContext(ctx, options)
	result := execResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exited exec.CodeExitError
	switch {
	case errors.As(err, &exited):
		result.ExitCode = exited.Code
		result.Error = exited.Error()
	case err != nil:
		result.ExitCode = -1
		result.Error = err.Error()
	}
	return result
}

func runForward(ctx context.Context, config *rest.Config, client kubernetes.Interface, namespace, pod,
	transport string, port, connections int, send string) forwardResult {
	url := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).
		SubResource("portforward").URL()
	var dialer httpstream.Dialer
	if transport == "spdy" {
		roundTripper, upgrader, err := spdy.RoundTripperFor(config)
		if err != nil {
			return forwardResult{Error: err.Error()}
		}
		dialer = spdy.NewDialer(upgrader, &http.Client{Transport: roundTripper}, "POST", url)
	} else {
		var err error
		dialer, err = portforward.NewSPDYOverWebsocketDialer(url, config)
		if err != nil {
			return forwardResult{Error: err.Error()}
		}
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	forwarder, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)},
		stop, ready, io.Discard, &errOut)
	if err != nil {
		return forwardResult{Error: err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- forwarder.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return forwardResult{Error: fmt.Sprintf("%v %s", err, errOut.String())}
	case <-ctx.Done():
		return forwardResult{Error: ctx.Err().Error()}
	}
	ports, err := forwarder.GetPorts()
	if err != nil {
		return forwardResult{Error: err.Error()}
	}
	result := forwardResult{Responses: []string{}}
	for range connections {
		response, err := roundTrip(ctx, ports[0].Local, send)
		if err != nil {
			result.Error = err.Error()
			break
		}
		result.Responses = append(result.Responses, response)
	}
	close(stop)
	if err := <-done; err != nil && result.Error == "" {
		result.Error = err.Error()
	}
	if errOut.Len() > 0 && result.Error == "" {
		result.Error = errOut.String()
	}
	return result
}

// roundTrip sends `send` on a new connection to the forwarder, half-closes it and reads until the pod's
// side ends.
func roundTrip(ctx context.Context, local uint16, send string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", local))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := io.WriteString(conn, send); err != nil {
		return "", err
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	data, err := io.ReadAll(conn)
	return string(data), err
}
