package scaffold

import (
	"fmt"
	"go/ast"
	"slices"
	"sort"
	"strings"
)

// portWebhook renders twin, the opkit setup of a kubebuilder webhook setup
// function fn: ctrl.NewWebhookManagedBy(mgr, &T{}) (or .For(&T{})) with
// WithDefaulter, WithValidator and their custom paths, or with none of them
// for a conversion hub.
//
// served is the import path and kind of the type whose defaulter or
// validator the twin serves, as "path|Kind" ("" for none).
func portWebhook(f *kbFile, fn *ast.FuncDecl, twin string, p *kbProject, gofiles []*kbFile, module string, imps map[string]string, rep *portReport, rewrites map[*ast.CallExpr]string) (src string, served string, ok bool) {
	where := fn.Name.Name
	chain := returnedChain(fn)
	if chain == nil || len(fn.Body.List) != 1 {
		rep.needs(f.Rel, f.line(fn), where, "not one builder chain returned: write "+twin+" with webhook.Register by hand (docs/webhooks.md)")
		return "", "", false
	}
	var typ, kind, defaulter, validator, dpath, vpath string
	var reads []string // kinds the hooks read through the manager's client
	scanned := map[string]bool{}
	ok = true
	setType := func(e ast.Expr) {
		t, k, isObj := objectType(f, e)
		if !isObj {
			rep.needs(f.Rel, f.line(e), where+" type", "the object is not &pkg.Kind{}: port it by hand")
			ok = false
			return
		}
		f.uses(e, imps)
		typ, kind = t, k
	}
	mgrName := ""
	if id, isID := chain[0].Args[0].(*ast.Ident); isID {
		mgrName = id.Name
	}
	untyped := len(chain[0].Args) == 1 // controller-runtime before 0.23: NewWebhookManagedBy(mgr).For(&T{}), untyped hooks
	if !untyped {
		setType(chain[0].Args[1])
	}
	for _, call := range chain[1:] {
		line := f.line(call)
		arg := func() string {
			a := call.Args[0]
			f.uses(a, imps)
			if u, isAddr := a.(*ast.UnaryExpr); isAddr {
				// One scan per hook type: the defaulter is often the validator's type.
				if lit, isLit := u.X.(*ast.CompositeLit); isLit && !scanned[f.src(lit.Type)] {
					scanned[f.src(lit.Type)] = true
					for _, t := range hookReads(f, gofiles, module, a, mgrName, twin, imps, rep) {
						if !slices.Contains(reads, t) {
							reads = append(reads, t)
						}
					}
				}
			}
			// jobset's &jobSetWebhook{client: mgr.GetClient()}
			edits, _, _, why := managerUses(f, a, mgrName, "", portedSetups{}, nil, imps)
			if why != "" {
				rep.needs(f.Rel, line, where+" "+method(call), why)
				ok = false
				return f.src(a)
			}
			src, err := applyEdits(f, f.Fset.Position(a.Pos()).Offset, f.Fset.Position(a.End()).Offset, edits)
			if err != nil {
				rep.needs(f.Rel, line, where+" "+method(call), err.Error())
				ok = false
				return f.src(a)
			}
			return src
		}
		switch m := method(call); m {
		case "For":
			setType(call.Args[0])
		case "WithDefaulter":
			defaulter = arg()
			rep.mapped(f.Rel, line, where+" WithDefaulter", "webhook.Hooks.Defaulter")
		case "WithValidator":
			validator = arg()
			rep.mapped(f.Rel, line, where+" WithValidator", "webhook.Hooks.Validator")
		case "WithDefaulterCustomPath":
			dpath = arg()
			rep.mapped(f.Rel, line, where+" WithDefaulterCustomPath", "crport.Paths.Defaulting")
		case "WithValidatorCustomPath":
			vpath = arg()
			rep.mapped(f.Rel, line, where+" WithValidatorCustomPath", "crport.Paths.Validation")
		case "Complete":
		default:
			rep.needs(f.Rel, line, where+" "+m, "a webhook builder call opkit does not map: port it by hand (docs/webhooks.md)")
			ok = false
		}
	}
	if !ok || typ == "" {
		if typ == "" && ok {
			rep.needs(f.Rel, f.line(fn), where, "no webhook type found: port it by hand")
		}
		return "", "", false
	}
	if untyped {
		rewrites[chain[len(chain)-1]] = typedChain(f, chain)
		rep.mapped(f.Rel, f.line(fn), where, "rewritten in place to controller-runtime 0.23's builder, NewWebhookManagedBy(mgr, &Kind{}) with WithCustomDefaulter and WithCustomValidator: "+
			"the controller-runtime opkit is built with has no other, and the project's own tests still call it")
	}
	imps["manager"] = opkitManager
	imps["webhook"] = opkitWebhook
	var b strings.Builder
	fmt.Fprintf(&b, "// %s serves what %s registers, on opkit's\n// manager's webhook server, at the same paths.\n", twin, where)
	recv := ""
	if fn.Recv != nil && len(fn.Recv.List) == 1 && len(fn.Recv.List[0].Names) == 1 {
		recv = "(" + fn.Recv.List[0].Names[0].Name + " " + f.src(fn.Recv.List[0].Type) + ") "
	}
	fmt.Fprintf(&b, "func %s%s(mgr *manager.Manager) error {\n", recv, twin)
	if conversionHub(f, typ, kind, p) {
		fmt.Fprintf(&b, "\tif err := webhook.RegisterConversion(mgr, webhook.Conversion[%s]{}); err != nil {\n\t\treturn err\n\t}\n", typ)
		rep.mapped(f.Rel, f.line(fn), where+" conversion of "+kind, "webhook.RegisterConversion at /convert, the spokes' ConvertTo and ConvertFrom unchanged")
	}
	if defaulter == "" && validator == "" {
		b.WriteString("\treturn nil\n}\n")
		return b.String(), "", true
	}
	imps["crport"] = opkitCrport
	if len(reads) > 0 {
		imps["cache"] = opkitCache
		b.WriteString("\t// Kinds its hooks read: registered with the cache, which the cached\n\t// client reads.\n")
		sort.Strings(reads)
		for _, t := range reads {
			fmt.Fprintf(&b, "\tif _, err := cache.Register[%s](mgr.Cache(), cache.TypeOptions{}); err != nil {\n\t\treturn err\n\t}\n", t)
		}
	}
	var hooks []string
	if untyped {
		if defaulter != "" {
			defaulter = fmt.Sprintf("crport.TypedDefaulter[%s](%s)", typ, defaulter)
		}
		if validator != "" {
			validator = fmt.Sprintf("crport.TypedValidator[%s](%s)", typ, validator)
		}
	}
	if defaulter != "" {
		hooks = append(hooks, "Defaulter: "+defaulter)
	}
	if validator != "" {
		hooks = append(hooks, "Validator: "+validator)
	}
	var paths []string
	if dpath != "" {
		paths = append(paths, "Defaulting: "+dpath)
	}
	if vpath != "" {
		paths = append(paths, "Validation: "+vpath)
	}
	fmt.Fprintf(&b, "\treturn crport.Webhooks(mgr, webhook.Hooks[%s]{%s}, crport.Paths{%s})\n}\n", typ, strings.Join(hooks, ", "), strings.Join(paths, ", "))
	pkg, _, _ := strings.Cut(strings.TrimPrefix(typ, "*"), ".")
	return b.String(), f.Imports[pkg] + "|" + kind, true
}

// conversionHub says whether PROJECT records a conversion webhook for the
// kind and version of typ (a type of the package its import names).
func conversionHub(f *kbFile, typ, kind string, p *kbProject) bool {
	pkg, _, _ := strings.Cut(strings.TrimPrefix(typ, "*"), ".")
	importPath := f.Imports[pkg]
	for _, r := range p.Resources {
		if r.Kind == kind && r.Path == importPath && r.Webhooks != nil && r.Webhooks.Conversion {
			return true
		}
	}
	return false
}

// typedChain is an untyped webhook chain of controller-runtime before
// 0.23, NewWebhookManagedBy(mgr).For(&T{}).WithDefaulter(d)..., as
// controller-runtime 0.23 and later spell it:
// NewWebhookManagedBy(mgr, &T{}).WithCustomDefaulter(d)....
func typedChain(f *kbFile, chain []*ast.CallExpr) string {
	var obj string
	var b strings.Builder
	for _, call := range chain[1:] {
		if method(call) == "For" {
			obj = f.src(call.Args[0])
		}
	}
	fmt.Fprintf(&b, "%s(%s, %s)", f.src(chain[0].Fun), f.src(chain[0].Args[0]), obj)
	for _, call := range chain[1:] {
		m := method(call)
		switch m {
		case "For":
			continue
		case "WithDefaulter":
			m = "WithCustomDefaulter"
		case "WithValidator":
			m = "WithCustomValidator"
		}
		args := make([]string, len(call.Args))
		for i, a := range call.Args {
			args[i] = f.src(a)
		}
		fmt.Fprintf(&b, ".\n\t\t%s(%s)", m, strings.Join(args, ", "))
	}
	return b.String()
}
