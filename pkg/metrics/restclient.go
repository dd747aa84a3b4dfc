package metrics

// The REST client metrics, with client-go's names and labels.
const (
	// RESTClientRequests counts HTTP requests to the API server by status
	// code ("<error>" when none came back), method and host.
	RESTClientRequests = "rest_client_requests_total"
	// RESTClientRequestDuration observes the seconds until the response
	// headers arrived, by verb (the HTTP method) and host.
	RESTClientRequestDuration = "rest_client_request_duration_seconds"
)
