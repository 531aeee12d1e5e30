// The baseline of the runtime benchmark: the same workload as bench/runtime-worker.ts (an informer and a
// controller over KVCachePoolBindings in one namespace, writing each one's status once by server-side
// apply), built the way a Go operator is: controller-runtime's manager, cache, work queue and client.
//
// Usage: controller-runtime-baseline <kubeconfig> <namespace> <concurrency> <resyncMs>
// It prints {"ready":true} once its cache has synced, then answers each "stats" line on stdin with one
// JSON line of figures; "stop" ends it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"go.uber.org/zap/zapcore"
)

var gvk = schema.GroupVersionKind{Group: "worker.gpustack.ai", Version: "v1", Kind: "KVCachePoolBinding"}

type first struct {
	Key       string `json:"key"`
	CreatedAt int64  `json:"createdAt"`
	EventAt   int64  `json:"eventAt"`
	StartedAt int64  `json:"startedAt"`
}

// figures is what the bench reads; the same fields as the TypeScript worker's.
type figures struct {
	Reconciles     int     `json:"reconciles"`
	ResyncEvents   int     `json:"resyncEvents"`
	Writes         int     `json:"writes"`
	FirstReconcile []first `json:"firstReconcile"`
	QueueDepth     int     `json:"queueDepth"`
}

type recorder struct {
	mu      sync.Mutex
	eventAt map[string]int64
	firsts  map[string]first
	figures
}

func nowMs() int64 { return time.Now().UnixMilli() }

func newBinding() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: controller-runtime-baseline <kubeconfig> <namespace> <concurrency> <resyncMs>")
		os.Exit(2)
	}
	kubeconfig, namespace := os.Args[1], os.Args[2]
	concurrency, _ := strconv.Atoi(os.Args[3])
	resyncMs, _ := strconv.Atoi(os.Args[4])
	log.SetLogger(zap.New(zap.Level(zapcore.WarnLevel)))

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fail(err)
	}
	// The kvpool client has no client-side rate limit; neither does this one (client-go's default is 5/s).
	cfg.QPS = -1
	resync := time.Duration(resyncMs) * time.Millisecond
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}, SyncPeriod: &resync},
		Client:  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fail(err)
	}

	rec := &recorder{eventAt: map[string]int64{}, firsts: map[string]first{}}
	var queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		rec.mu.Lock()
		queue = q
		rec.mu.Unlock()
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
	}
	events := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			rec.mu.Lock()
			rec.eventAt[e.Object.GetNamespace()+"/"+e.Object.GetName()] = nowMs()
			rec.mu.Unlock()
			enqueue(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
				rec.mu.Lock()
				rec.ResyncEvents++
				rec.mu.Unlock()
			}
			enqueue(q, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
	}

	c := mgr.GetClient()
	reconciler := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		startedAt := nowMs()
		key := req.String()
		rec.mu.Lock()
		rec.Reconciles++
		rec.mu.Unlock()
		obj := newBinding()
		if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		rec.mu.Lock()
		if _, seen := rec.firsts[key]; !seen {
			createdAt, _ := strconv.ParseInt(obj.GetAnnotations()["bench.kvpool/created-at"], 10, 64)
			eventAt, ok := rec.eventAt[key]
			if !ok {
				eventAt = startedAt
			}
			rec.firsts[key] = first{Key: key, CreatedAt: createdAt, EventAt: eventAt, StartedAt: startedAt}
		}
		rec.mu.Unlock()
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		if phase == "Ready" {
			return reconcile.Result{}, nil
		}
		patch := newBinding()
		patch.SetNamespace(req.Namespace)
		patch.SetName(req.Name)
		patch.Object["status"] = map[string]any{"phase": "Ready"}
		rec.mu.Lock()
		rec.Writes++
		rec.mu.Unlock()
		err := c.Status().Patch(ctx, patch, client.Apply, client.FieldOwner("bench/status"), client.ForceOwnership)
		return reconcile.Result{}, err
	})

	err = ctrl.NewControllerManagedBy(mgr).
		Named("bench").
		Watches(newBinding(), events).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(reconciler)
	if err != nil {
		fail(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// GetInformer blocks until this kind's informer (the one the controller watches through) has synced.
	if _, err := mgr.GetCache().GetInformer(ctx, newBinding()); err != nil {
		fail(err)
	}
	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(map[string]bool{"ready": true})

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "stats":
			rec.mu.Lock()
			f := rec.figures
			f.FirstReconcile = make([]first, 0, len(rec.firsts))
			for _, v := range rec.firsts {
				f.FirstReconcile = append(f.FirstReconcile, v)
			}
			q := queue
			rec.mu.Unlock()
			if q != nil {
				f.QueueDepth = q.Len()
			}
			_ = out.Encode(f)
		case "stop":
			cancel()
			if err := <-done; err != nil {
				fail(err)
			}
			return
		}
	}
	cancel()
	<-done
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
