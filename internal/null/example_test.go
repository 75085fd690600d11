package null_test

import (
	"encoding/json"
	"fmt"

	"github.com/roce-probe/roce-probe/internal/null"
)

func Example() {
	type port struct {
		Netdev  *string `json:"netdev"`
		Ifindex *int    `json:"ifindex"`
	}
	b, _ := json.Marshal([]port{
		{Netdev: null.String("eth0.100"), Ifindex: null.Int(7)},
		{Netdev: null.String(""), Ifindex: null.Int(0)},
	})
	fmt.Println(string(b))
	// Output: [{"netdev":"eth0.100","ifindex":7},{"netdev":null,"ifindex":null}]
}
