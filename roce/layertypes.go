package roce

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Wire constants.
const (
	// UDPPort is the RoCE v2 UDP destination port (IANA "roce").
	UDPPort layers.UDPPort = 4791
	// EthernetTypeRoCEv1 is the EtherType of RoCE v1 (ETH_P_IBOE).
	EthernetTypeRoCEv1 layers.EthernetType = 0x8915
	// NextHeaderBTH is the GRH next-header value announcing a BTH (IBTA).
	NextHeaderBTH = 0x1B
	// ICRCLen is the length of the invariant CRC that ends every packet.
	ICRCLen = 4
)

// Layer types, registered once in the application range 1000-1999.
var (
	LayerTypeGRH          = gopacket.RegisterLayerType(1791, gopacket.LayerTypeMetadata{Name: "IB-GRH", Decoder: decoderID(decGRH)})
	LayerTypeBTH          = gopacket.RegisterLayerType(1792, gopacket.LayerTypeMetadata{Name: "IB-BTH", Decoder: decoderID(decBTH)})
	LayerTypeRDETH        = gopacket.RegisterLayerType(1793, gopacket.LayerTypeMetadata{Name: "IB-RDETH", Decoder: decoderID(decRDETH)})
	LayerTypeDETH         = gopacket.RegisterLayerType(1794, gopacket.LayerTypeMetadata{Name: "IB-DETH", Decoder: decoderID(decDETH)})
	LayerTypeRETH         = gopacket.RegisterLayerType(1795, gopacket.LayerTypeMetadata{Name: "IB-RETH", Decoder: decoderID(decRETH)})
	LayerTypeAETH         = gopacket.RegisterLayerType(1796, gopacket.LayerTypeMetadata{Name: "IB-AETH", Decoder: decoderID(decAETH)})
	LayerTypeImmDt        = gopacket.RegisterLayerType(1797, gopacket.LayerTypeMetadata{Name: "IB-ImmDt", Decoder: decoderID(decImmDt)})
	LayerTypeIETH         = gopacket.RegisterLayerType(1798, gopacket.LayerTypeMetadata{Name: "IB-IETH", Decoder: decoderID(decIETH)})
	LayerTypeAtomicETH    = gopacket.RegisterLayerType(1799, gopacket.LayerTypeMetadata{Name: "IB-AtomicETH", Decoder: decoderID(decAtomicETH)})
	LayerTypeAtomicAckETH = gopacket.RegisterLayerType(1800, gopacket.LayerTypeMetadata{Name: "IB-AtomicAckETH", Decoder: decoderID(decAtomicAckETH)})
	LayerTypeXRCETH       = gopacket.RegisterLayerType(1801, gopacket.LayerTypeMetadata{Name: "IB-XRCETH", Decoder: decoderID(decXRCETH)})
	LayerTypeFETH         = gopacket.RegisterLayerType(1802, gopacket.LayerTypeMetadata{Name: "IB-FETH", Decoder: decoderID(decFETH)})
	LayerTypeCNP          = gopacket.RegisterLayerType(1803, gopacket.LayerTypeMetadata{Name: "RoCE-CNP", Decoder: decoderID(decCNP)})
	LayerTypePayload      = gopacket.RegisterLayerType(1804, gopacket.LayerTypeMetadata{Name: "RoCE-Payload", Decoder: decoderID(decPayload)})
)

// EndpointGID is the gopacket endpoint type of a GID, used by GRH.NetworkFlow.
var EndpointGID = gopacket.RegisterEndpointType(1791, gopacket.EndpointTypeMetadata{
	Name: "GID",
	Formatter: func(b []byte) string {
		var g GID
		copy(g[:], b)
		return g.String()
	},
})

func init() {
	initOpcodes()
	layers.RegisterUDPPortLayerType(UDPPort, LayerTypeBTH)
	layers.EthernetTypeMetadata[EthernetTypeRoCEv1] = layers.EnumMetadata{
		DecodeWith: decoderID(decGRH),
		Name:       "RoCEv1",
		LayerType:  LayerTypeGRH,
	}
}
