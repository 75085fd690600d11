package null_test

import (
	"encoding/json"
	"fmt"

	"github.com/roce-probe/roce-probe/internal/null"
)

func Example() {
	type port struct {
		Netdev *string `json:"netdev"`
		VLAN   *int    `json:"vlan"`
	}
	b, _ := json.Marshal([]port{
		{Netdev: null.String("eth0.100"), VLAN: null.Int(100)},
		{Netdev: null.String(""), VLAN: null.Int(0)},
	})
	fmt.Println(string(b))
	// Output: [{"netdev":"eth0.100","vlan":100},{"netdev":null,"vlan":null}]
}
