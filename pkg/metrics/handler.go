package metrics

// HandlerPanics counts the panics a controller's sources recovered from its
// handlers, map functions and predicates, labelled by controller and by the
// type the source watches ("v1/ConfigMap"). controller-runtime has no such
// series: a panic there ends the process.
const HandlerPanics = "opkit_controller_handler_panics_total"
