package api_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cairndns/cairn/api"
)

// Register a service with the local agent and tell the two kinds of
// failure apart.
func Example() {
	client, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	err = client.Agent().ServiceRegister(context.Background(), &api.AgentServiceRegistration{
		Name: "web",
		Port: 8080,
		Tags: []string{"v1"},
	})
	var (
		unreachable *api.UnreachableError
		rejected    *api.StatusError
	)
	switch {
	case errors.As(err, &unreachable):
		fmt.Println("no agent:", err)
	case errors.As(err, &rejected) && rejected.Field != "":
		fmt.Printf("field %s rejected: %s\n", rejected.Field, rejected.Reason)
	case err != nil:
		log.Fatal(err)
	}
}
