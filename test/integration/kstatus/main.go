// Reads one Kubernetes object as JSON on stdin and prints kstatus's verdict (status and message).
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		panic(err)
	}
	// The unstructured decoder, as client-go's: integers stay int64, which kstatus's accessors require.
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	res, err := status.Compute(obj)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s\t%s\n", res.Status, res.Message)
}
