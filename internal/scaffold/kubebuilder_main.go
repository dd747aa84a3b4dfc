package scaffold

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// kbFlagMap says what each flag of kubebuilder's main becomes in opkit's
// manager.Options; the flags keep their names, so config/manager's args
// still apply.
var kbFlagMap = map[string]string{
	"metrics-bind-address":      "Metrics.BindAddress",
	"metrics-secure":            "Metrics.Secure: tokens the API server authenticates and authorizes, as controller-runtime's filters.WithAuthenticationAndAuthorization",
	"metrics-cert-path":         "Metrics.CertDir",
	"metrics-cert-name":         "checked: opkit reads tls.crt from the directory",
	"metrics-cert-key":          "checked: opkit reads tls.key from the directory",
	"health-probe-bind-address": "Health.BindAddress",
	"leader-elect":              "LeaderElection.Enabled",
	"webhook-cert-path":         "Webhook.CertDir",
	"webhook-cert-name":         "checked: opkit reads tls.crt from the directory",
	"webhook-cert-key":          "checked: opkit reads tls.key from the directory",
	"webhook-port":              "Webhook.Port",
	"enable-http2":              "Webhook.TLSOpts: HTTP/2 off unless set, as kubebuilder's main turns it off",
}

// kbOptionMap says what each field of ctrl.Options in kubebuilder's main
// becomes: a Go expression template over the field's value ("%s"), set
// on the manager.Options named mgrOptions; "" when the flags already
// carry it.
var kbOptionMap = map[string]string{
	"Scheme":                        "mgrOptions.Scheme = %s",
	"Metrics":                       "",
	"WebhookServer":                 "",
	"HealthProbeBindAddress":        "mgrOptions.Health.BindAddress = %s",
	"LeaderElection":                "mgrOptions.LeaderElection.Enabled = %s",
	"LeaderElectionID":              "mgrOptions.LeaderElection.Name = %s",
	"LeaderElectionNamespace":       "mgrOptions.LeaderElection.Namespace = %s",
	"LeaderElectionReleaseOnCancel": "mgrOptions.LeaderElection.ReleaseOnCancel = %s",
	"LeaseDuration":                 "mgrOptions.LeaderElection.LeaseDuration = *%s",
	"RenewDeadline":                 "mgrOptions.LeaderElection.RenewDeadline = *%s",
	"RetryPeriod":                   "mgrOptions.LeaderElection.RetryPeriod = *%s",
	"GracefulShutdownTimeout":       "mgrOptions.ShutdownTimeout = *%s",
}

// kbMain is what the converter takes from kubebuilder's cmd/main.go.
type kbMain struct {
	f            *kbFile
	imps         map[string]string
	decls        []string          // top-level declarations kept: the scheme, setupLog, helpers
	init         []string          // init's statements
	prefix       []string          // main's statements up to the logger: the flags
	flags        map[string]string // flag name -> its variable
	flagLines    map[string]int
	unused       []string // flags whose variable the port does not use
	options      []string // statements setting mgrOptions from ctrl.Options
	setups       []string // statements of setup(mgr)
	watchNS      bool     // WATCH_NAMESPACE sets the cache's namespaces
	webhooks     bool
	topLevel     map[string]bool   // the file's top-level names
	prefixNames  map[string]bool   // what main's kept flags prefix declares
	keptNames    map[string]bool   // what main's statements kept in setup declare
	keptErr      bool              // the statement kept last sets err, and a check of it may follow
	started      bool              // main has started the manager: what follows runs after it stops
	optionsVar   string            // main's variable of controller-runtime's manager options, built at run time; "" when main gives NewManager a literal
	restConfig   string            // the rest config main gives NewManager, with optionsVar
	pre          []string          // main's statements between its flags and NewManager, with optionsVar: kept as they are
	preNames     map[string]bool   // what pre declares
	opkitOptions string            // the port's variable of opkit's manager options
	prefixUses   []string          // the statements of prefix that neither declare variables nor register flags
	pkgPath      string            // main's package
	twins        portedSetups      // the twins the port has
	vars         map[string]string // the types of variables kept statements declare (varTypes)
}

// portMain reads kubebuilder's main and renders opkit's in its place.
func portMain(f *kbFile, module string, setups portedSetups, rep *portReport) ([]byte, error) {
	m := &kbMain{f: f, imps: map[string]string{}, flags: map[string]string{}, flagLines: map[string]int{}, topLevel: map[string]bool{}, prefixNames: map[string]bool{}, keptNames: map[string]bool{}, preNames: map[string]bool{}, opkitOptions: "mgrOptions", pkgPath: pkgPathOf(f, module), twins: setups, vars: map[string]string{}}
	var mainFn *ast.FuncDecl
	for _, d := range f.AST.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				m.topLevel[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						m.topLevel[id.Name] = true
					}
				case *ast.TypeSpec:
					m.topLevel[s.Name.Name] = true
				}
			}
		}
	}
	for _, d := range f.AST.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			f.uses(d, m.imps)
			m.decls = append(m.decls, f.src(d))
			rep.mapped(f.Rel, f.line(d), "declaration "+headline(f.src(d)), "kept")
		case *ast.FuncDecl:
			switch {
			case d.Name.Name == "main" && d.Recv == nil:
				mainFn = d
			case d.Name.Name == "init" && d.Recv == nil:
				for _, st := range d.Body.List {
					f.uses(st, m.imps)
					m.init = append(m.init, f.src(st))
				}
				rep.mapped(f.Rel, f.line(d), "init", "kept: the scheme's types")
			case refersTo(f, d, "sigs.k8s.io/controller-runtime/pkg/cache"):
				rep.mapped(f.Rel, f.line(d), "func "+d.Name.Name, "dropped: it builds controller-runtime's cache options, which opkit's cache.Options.Namespaces replaces")
			case setups[setupKey(pkgPathOf(f, module)+"."+d.Name.Name)] != "":
				rep.mapped(f.Rel, f.line(d), "func "+d.Name.Name, "left out of main.go: its twin "+setups[setupKey(pkgPathOf(f, module)+"."+d.Name.Name)]+" is what the port calls")
			case takesManager(f, d):
				f.uses(d, m.imps)
				m.decls = append(m.decls, f.src(d))
				why := ""
				if w := setups[whyKey(setupKey(pkgPathOf(f, module)+"."+d.Name.Name))]; w != "" {
					why = " (no twin on opkit's manager: " + w + ")"
				}
				rep.needs(f.Rel, f.line(d), "func "+d.Name.Name, "kept as it is, but it uses controller-runtime's manager, which the port does not make, and main no longer calls it"+why+": "+
					"move what it sets up into main's setup, with each reconciler's SetupWithOpkit and each webhook's Setup...WebhookWithOpkit")
			default:
				f.uses(d, m.imps)
				m.decls = append(m.decls, f.src(d))
				rep.mapped(f.Rel, f.line(d), "func "+d.Name.Name, "kept")
			}
		}
	}
	if mainFn == nil {
		return nil, fmt.Errorf("%s has no func main", f.Rel)
	}
	body := mainFn.Body.List
	cut := 0
	for i, st := range body {
		if isCallTo(st, "SetLogger") || isCallTo(st, "Parse") {
			cut = i + 1
		}
	}
	if cut == 0 {
		return nil, fmt.Errorf("%s: main parses no flags (no flag.Parse): opkit init --from-kubebuilder ports kubebuilder's main; port this one by hand (docs/porting-from-controller-runtime.md)", f.Rel)
	}
	// A main that builds the manager's options at run time (jobset and
	// lws load theirs from a config file, then apply their flags) keeps
	// what it does before the manager as it is; crport.ManagerOptions maps
	// the options it built when the port starts.
	nm := -1
	for i, st := range body[cut:] {
		if opts, cfg, ok := newManagerFromVariable(f, st); ok && !literalOptions(f, body[cut:cut+i], opts) {
			nm, m.optionsVar, m.restConfig = cut+i, opts, cfg
			break
		}
	}
	for _, st := range body[:cut] {
		f.uses(st, m.imps)
		m.prefix = append(m.prefix, f.src(st))
		if _, isDecl := st.(*ast.DeclStmt); !isDecl && !registersFlag(st) {
			// lws's if printVersion { ... }: a use of a flag, kept.
			m.prefixUses = append(m.prefixUses, f.src(st))
		}
		for _, name := range declares(st) {
			m.prefixNames[name] = true
		}
		ast.Inspect(st, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 || !strings.HasSuffix(method(call), "Var") {
				return true
			}
			u, isAddr := call.Args[0].(*ast.UnaryExpr)
			lit, isLit := call.Args[1].(*ast.BasicLit)
			if !isAddr || !isLit {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			m.flags[name] = f.src(u.X)
			m.flagLines[name] = f.line(call)
			if how, known := kbFlagMap[name]; known && m.optionsVar == "" {
				rep.mapped(f.Rel, f.line(call), "flag --"+name, how)
			}
			return true
		})
	}
	rest := body[cut:]
	if m.optionsVar != "" {
		for _, st := range body[cut:nm] {
			f.uses(st, m.imps)
			for _, name := range declares(st) {
				m.preNames[name] = true
			}
			rep.mapped(f.Rel, f.line(st), headline(f.src(st)), "kept before the manager, as it is: it builds the manager's options, which crport.ManagerOptions maps when the port starts")
		}
		if nm > cut {
			// As main has them, with their comments.
			m.pre = []string{string(f.Src[f.Fset.Position(body[cut].Pos()).Offset:f.Fset.Position(body[nm-1].End()).Offset])}
		}
		rep.mapped(f.Rel, f.line(body[nm]), headline(f.src(body[nm])), "manager.New("+m.restConfig+", crport.ManagerOptions("+m.optionsVar+")): controller-runtime's options, built as main built them, mapped to opkit's, or an error naming each option opkit's manager does not take")
		rest = body[nm+1:]
	}
	for _, st := range rest {
		m.classify(st, setups, rep)
	}
	for name, v := range m.flags {
		if _, known := kbFlagMap[name]; known && m.optionsVar == "" {
			continue
		}
		if m.passesOn(v) {
			rep.mapped(f.Rel, m.flagLines[name], "flag --"+name, "parsed as before and passed on as main passed it")
		} else {
			m.unused = append(m.unused, name)
			rep.needs(f.Rel, m.flagLines[name], "flag --"+name, "parsed as before, but what main did with it is not ported: use "+v+" where the port needs it")
		}
	}
	sort.Strings(m.unused)
	return m.render(module)
}

// classify accounts for one statement of main after its flags.
func (m *kbMain) classify(st ast.Stmt, setups portedSetups, rep *portReport) {
	f := m.f
	checks := m.keptErr
	m.keptErr = false
	if onlyExits(f, st) {
		if checks {
			f.uses(st, m.imps)
			m.setups = append(m.setups, f.src(st))
			rep.mapped(f.Rel, f.line(st), headline(f.src(st)), "kept in setup: it checks the statement kept before it")
			return
		}
		rep.mapped(f.Rel, f.line(st), headline(f.src(st)), "regenerated on opkit's manager")
		return
	}
	if es, ok := st.(*ast.ExprStmt); ok {
		if call, ok := es.X.(*ast.CallExpr); ok && strings.HasPrefix(f.src(call.Fun), "setupLog.") {
			rep.mapped(f.Rel, f.line(st), headline(f.src(st)), "a log line of main's; the port logs its own")
			return
		}
	}
	handled := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CompositeLit:
			if f.src(x.Type) == "ctrl.Options" || strings.HasSuffix(f.src(x.Type), "manager.Options") {
				handled = true
				for _, el := range x.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						m.option(f.src(kv.Key), kv.Value, rep)
					}
				}
				return false
			}
		case *ast.AssignStmt:
			if len(x.Lhs) == 1 {
				if sel, ok := x.Lhs[0].(*ast.SelectorExpr); ok && sel.Sel.Name == "Cache" {
					handled = true
					rep.mapped(f.Rel, f.line(x), "ctrl.Options.Cache", "cache.Options.Namespaces from WATCH_NAMESPACE")
					return false
				}
			}
		case *ast.CallExpr:
			switch method(x) {
			case "SetupWithManager":
				recv := x.Fun.(*ast.SelectorExpr).X
				if p, isParen := recv.(*ast.ParenExpr); isParen {
					recv = p.X
				}
				if _, _, isLit := objectType(f, recv); !isLit {
					// A reconciler a kept statement made (jobset's
					// controllers.NewJobSetReconciler): keep maps it.
					return false
				}
				handled = true
				m.controllerSetup(x, setups, rep)
				return false
			case "AddHealthzCheck", "AddReadyzCheck":
				handled = true
				to := healthChecks[method(x)]
				f.uses(x, m.imps)
				m.setups = append(m.setups, fmt.Sprintf("if err := mgr.%s(%s, %s); err != nil {\n\treturn err\n}", to, f.src(x.Args[0]), f.src(x.Args[1])))
				rep.mapped(f.Rel, f.line(x), method(x), "mgr."+to+", which takes the same checker")
				return false
			case "getWatchNamespace":
				handled = true
				m.watchNS = true
				rep.mapped(f.Rel, f.line(x), "WATCH_NAMESPACE", "cache.Options.Namespaces: the manager watches those namespaces only")
			case "NewManager", "Start", "NewServer", "GetConfigOrDie", "SetupSignalHandler":
				handled = true
				m.started = m.started || method(x) == "Start"
			default:
				name := method(x)
				if strings.HasPrefix(name, "Setup") && strings.HasSuffix(name, "WebhookWithManager") {
					handled = true
					m.webhookSetup(x, setups, rep)
					return false
				}
			}
		case *ast.Ident:
			switch x.Name {
			case "tlsOpts", "disableHTTP2", "webhookServerOptions", "metricsServerOptions", "webhookTLSOpts", "webhookServer",
				"metricsCertWatcher", "webhookCertWatcher": // opkit's servers reload their certificates from the directory
				handled = true
			}
		}
		return true
	})
	switch {
	case handled:
		rep.mapped(f.Rel, f.line(st), headline(f.src(st)), "regenerated on opkit's manager")
	case m.keep(st, rep):
	default:
		rep.needs(f.Rel, f.line(st), headline(f.src(st)), "a statement of main that opkit does not map: port it into the new cmd/main.go by hand")
	}
}

// option maps one field of ctrl.Options.
func (m *kbMain) option(key string, v ast.Expr, rep *portReport) {
	f := m.f
	tmpl, ok := kbOptionMap[key]
	if !ok {
		rep.needs(f.Rel, f.line(v), "ctrl.Options."+key, "a manager option opkit's manager.Options does not map: see docs/porting-from-controller-runtime.md and set its counterpart by hand")
		return
	}
	if tmpl == "" {
		rep.mapped(f.Rel, f.line(v), "ctrl.Options."+key, "from the flags")
		return
	}
	f.uses(v, m.imps)
	m.options = append(m.options, fmt.Sprintf(tmpl, f.src(v)))
	rep.mapped(f.Rel, f.line(v), "ctrl.Options."+key, strings.TrimPrefix(strings.Split(tmpl, " = ")[0], "mgrOptions."))
}

// controllerSetup maps (&pkg.XReconciler{...}).SetupWithManager(mgr).
func (m *kbMain) controllerSetup(call *ast.CallExpr, setups portedSetups, rep *portReport) {
	f := m.f
	sel := call.Fun.(*ast.SelectorExpr)
	x := sel.X
	if p, ok := x.(*ast.ParenExpr); ok {
		x = p.X
	}
	typ, kind, ok := objectType(f, x)
	pkg, _, _ := strings.Cut(strings.TrimPrefix(typ, "*"), ".")
	twin, ported := setups[setupKey(f.Imports[pkg]+"."+kind)]
	if !ok || !ported {
		rep.needs(f.Rel, f.line(call), "SetupWithManager of "+f.src(x), "its controller was not ported (see its entry): set it up on opkit's manager by hand")
		return
	}
	lit := x.(*ast.UnaryExpr).X.(*ast.CompositeLit)
	var fields, pre []string
	for _, el := range lit.Elts {
		kv, isKV := el.(*ast.KeyValueExpr)
		if !isKV {
			rep.needs(f.Rel, f.line(el), "a field of "+kind, "not keyed: set it by hand")
			continue
		}
		val := f.src(kv.Value)
		switch {
		case val == "mgr.GetClient()":
			val = "mgr.CachedClient()"
			rep.mapped(f.Rel, f.line(el), kind+"."+f.src(kv.Key), "mgr.CachedClient(): reads copy out of opkit's cache, as controller-runtime's client does")
		case val == "mgr.GetScheme()":
			val = "mgr.Scheme()"
			rep.mapped(f.Rel, f.line(el), kind+"."+f.src(kv.Key), "mgr.Scheme()")
		case val == "mgr.GetAPIReader()":
			val = "mgr.UncachedClient()"
			rep.mapped(f.Rel, f.line(el), kind+"."+f.src(kv.Key), "mgr.UncachedClient(), which reads from the API server")
		case strings.HasPrefix(val, "mgr.GetEventRecorder(") || strings.HasPrefix(val, "mgr.GetEventRecorderFor("):
			v := fmt.Sprintf("recorder%d", len(m.setups))
			arg := f.src(kv.Value.(*ast.CallExpr).Args[0])
			pre = append(pre, fmt.Sprintf("%s, err := mgr.EventRecorder(%s)\nif err != nil {\n\treturn err\n}", v, arg))
			val = v
			how := "mgr.EventRecorder: Events of the events.k8s.io API"
			if strings.HasPrefix(f.src(kv.Value), "mgr.GetEventRecorderFor(") {
				m.imps["crport"] = opkitCrport
				val = "crport.LegacyRecorder(" + v + ")"
				how = "crport.LegacyRecorder over mgr.EventRecorder: the record.EventRecorder interface, Events of the events.k8s.io API"
			}
			rep.mapped(f.Rel, f.line(el), kind+"."+f.src(kv.Key), how)
		case strings.Contains(val, "mgr."):
			rep.needs(f.Rel, f.line(el), kind+"."+f.src(kv.Key)+": "+val, "a manager method opkit names differently: set the field by hand")
			continue
		default:
			f.uses(kv.Value, m.imps)
			rep.mapped(f.Rel, f.line(el), kind+"."+f.src(kv.Key), "kept")
		}
		fields = append(fields, f.src(kv.Key)+": "+val)
	}
	f.uses(lit.Type, m.imps)
	m.setups = append(m.setups, pre...)
	m.setups = append(m.setups, fmt.Sprintf("if err := (&%s{\n%s,\n}).%s(mgr); err != nil {\n\treturn fmt.Errorf(\"set up %s: %%w\", err)\n}", f.src(lit.Type), strings.Join(fields, ",\n"), twin, kind))
	rep.mapped(f.Rel, f.line(call), "SetupWithManager of "+kind, twin)
}

// webhookSetup maps pkg.SetupXWebhookWithManager(mgr).
func (m *kbMain) webhookSetup(call *ast.CallExpr, setups portedSetups, rep *portReport) {
	f := m.f
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		rep.needs(f.Rel, f.line(call), f.src(call), "not a call of another package's setup: port it by hand")
		return
	}
	pkg := f.src(sel.X)
	twin, ported := setups[setupKey(f.Imports[pkg]+"."+sel.Sel.Name)]
	if !ported {
		rep.needs(f.Rel, f.line(call), f.src(call), "its webhook was not ported (see its entry): register it on opkit's webhook server by hand")
		return
	}
	m.imps[pkg] = f.Imports[pkg]
	m.webhooks = true
	m.setups = append(m.setups, fmt.Sprintf("if webhooks {\n\tif err := %s.%s(mgr); err != nil {\n\t\treturn fmt.Errorf(\"set up the webhook %s: %%w\", err)\n\t}\n}", pkg, twin, strings.TrimSuffix(strings.TrimPrefix(sel.Sel.Name, "Setup"), "WebhookWithManager")))
	rep.mapped(f.Rel, f.line(call), sel.Sel.Name, pkg+"."+twin+", unless ENABLE_WEBHOOKS is \"false\"")
}

// passesOn says whether the port's statements use the variable v.
func (m *kbMain) passesOn(v string) bool {
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`)
	return word.MatchString(strings.Join(m.setups, "\n")) || word.MatchString(strings.Join(m.options, "\n")) || word.MatchString(strings.Join(m.pre, "\n")) || word.MatchString(strings.Join(m.prefixUses, "\n"))
}

// onlyExits says whether st is kubebuilder's check of an error: if err
// != nil { log it; os.Exit(1) }.
func onlyExits(f *kbFile, st ast.Stmt) bool {
	ifs, ok := st.(*ast.IfStmt)
	if !ok || ifs.Init != nil || ifs.Else != nil || f.src(ifs.Cond) != "err != nil" {
		return false
	}
	for _, b := range ifs.Body.List {
		es, ok := b.(*ast.ExprStmt)
		if !ok {
			return false
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			return false
		}
		if fn := f.src(call.Fun); fn != "os.Exit" && !strings.HasPrefix(fn, "setupLog.") {
			return false
		}
	}
	return true
}

// takesManager says whether fn uses controller-runtime's manager: takes
// or returns a ctrl.Manager, or calls a SetupWithManager.
func takesManager(f *kbFile, fn *ast.FuncDecl) bool {
	found := false
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && x.Sel.Name == "Manager" {
				p := f.Imports[id.Name]
				found = found || p == "sigs.k8s.io/controller-runtime" || p == "sigs.k8s.io/controller-runtime/pkg/manager"
			}
		case *ast.CallExpr:
			m := method(x)
			found = found || m == "SetupWithManager" || (strings.HasPrefix(m, "Setup") && strings.HasSuffix(m, "WithManager"))
		}
		return !found
	})
	return found
}

// isCallTo says whether st is a call of a function or method named name.
func isCallTo(st ast.Stmt, name string) bool {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	return ok && method(call) == name
}

// refersTo says whether n uses the package importPath.
func refersTo(f *kbFile, n ast.Node, importPath string) bool {
	imps := map[string]string{}
	f.uses(n, imps)
	for _, p := range imps {
		if p == importPath {
			return true
		}
	}
	return false
}

func headline(s string) string {
	for strings.HasPrefix(strings.TrimSpace(s), "//") {
		_, s, _ = strings.Cut(s, "\n")
	}
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 80 {
		l = l[:80] + "..."
	}
	return l
}

// newManagerFromVariable says whether st makes controller-runtime's manager
// from options held in a variable (mgr, err := ctrl.NewManager(cfg,
// options)), and returns the options' and the rest config's source.
func newManagerFromVariable(f *kbFile, st ast.Stmt) (options, restConfig string, ok bool) {
	as, isAssign := st.(*ast.AssignStmt)
	if !isAssign || len(as.Rhs) != 1 {
		return "", "", false
	}
	call, isCall := as.Rhs[0].(*ast.CallExpr)
	if !isCall || method(call) != "NewManager" || len(call.Args) != 2 {
		return "", "", false
	}
	id, isID := call.Args[1].(*ast.Ident)
	if !isID {
		return "", "", false
	}
	return id.Name, f.src(call.Args[0]), true
}

// registersFlag says whether st registers a flag (flag.StringVar(&v, ...)).
func registersFlag(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) >= 2 && strings.HasSuffix(method(call), "Var") {
			if u, isAddr := call.Args[0].(*ast.UnaryExpr); isAddr && u.Op == token.AND {
				found = true
			}
		}
		return !found
	})
	return found
}

// literalOptions says whether body makes the options variable v from a
// ctrl.Options literal (kubebuilder's mgrOptions := ctrl.Options{...}),
// which the converter maps field by field, as it maps one given to
// NewManager itself.
func literalOptions(f *kbFile, body []ast.Stmt, v string) bool {
	for _, st := range body {
		as, ok := st.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			continue
		}
		id, isID := as.Lhs[0].(*ast.Ident)
		lit, isLit := as.Rhs[0].(*ast.CompositeLit)
		if isID && isLit && id.Name == v && (f.src(lit.Type) == "ctrl.Options" || strings.HasSuffix(f.src(lit.Type), "manager.Options")) {
			return true
		}
	}
	return false
}
