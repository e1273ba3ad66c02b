package httpapi

// Route is one method of one route, as the mux serves it.
type Route struct {
	Pattern string // as registered, "/v1/kv/{key...}"
	Method  string
	Need    Need
}

// Routes lists every route the API serves, from the table the mux is
// built from: for TestEveryRouteDeclaresItsNeeds and routes.json.
func Routes() []Route {
	var out []Route
	for _, rt := range (&Server{}).table() {
		for _, m := range rt.methods() {
			out = append(out, Route{Pattern: rt.pattern, Method: m, Need: rt.needs[m]})
		}
	}
	return out
}
