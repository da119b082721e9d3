// The cert-manager controller as the tests run it: cert-manager's own controllers and issuers, from its
// published Go module, wired by this small main because the module of cert-manager's `cmd/controller` is not
// published on the Go module proxy. It runs the controllers a self-signed or CA Issuer needs (Issuers,
// Certificates, CertificateRequests and their approver); no webhook, no ACME, no Vault or Venafi.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
	"golang.org/x/sync/errgroup"

	// Each registers its controller in controller.Known().
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// The issuer kinds the Issuers controller can set up.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server to work against")
	namespace := flag.String("namespace", "", "the one namespace to watch (all when empty)")
	gates := flag.String("feature-gates", "", "cert-manager feature gates, as Name=true|false,...")
	workers := flag.Int("workers", 2, "workers per controller")
	flag.Parse()
	if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager-controller: --feature-gates: %v\n", err)
		os.Exit(2)
	}
	logf.InitLogs()
	defer logf.FlushLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	if err := run(ctx, *kubeconfig, *namespace, *workers); err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager-controller: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string, workers int) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		Namespace:          namespace,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: "cert-manager"},
		// As cert-manager's Helm chart: the Secret is not owned by its Certificate unless asked.
		CertificateOptions: controller.CertificateOptions{EnableOwnerRef: false},
	})
	if err != nil {
		return err
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	group, ctx := errgroup.WithContext(ctx)
	for name, construct := range controller.Known() {
		running, err := construct(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		group.Go(func() error { return running.Run(workers, ctx) })
	}
	// Informers are started after every controller has asked for the ones it needs.
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	return group.Wait()
}
