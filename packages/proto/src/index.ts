// The generated modules each repeat ts-proto's helper types, so cell and model messages are
// re-exported by name and the service module (which imports both) wholesale.
export { Cell, IndexValue, Record } from './gen/shameless/v1/cell.js';
export {
  FieldDefinition,
  FieldType,
  IndexDefinition,
  ModelDefinition,
} from './gen/shameless/v1/model.js';
// Consumer groups' messages (groups.proto).
export {
  Acknowledge,
  AcknowledgementsCommitted,
  CellParked,
  ConsumeRequest,
  ConsumeResponse,
  ConsumerGroupMember,
  ConsumerGroupShard,
  Deliveries,
  Delivery,
  DescribeConsumerGroupRequest,
  DescribeConsumerGroupResponse,
  FailedDelivery,
  GroupHeartbeat,
  GroupJoined,
  GroupLeft,
  JoinGroup,
  LeaveGroup,
  ListParkedCellsRequest,
  ListParkedCellsResponse,
  MemberHeartbeat,
  ParkCell,
  ParkedCell,
  ReplayParkedCellRequest,
  ReplayParkedCellResponse,
  ResetConsumerGroupRequest,
  ResetConsumerGroupResponse,
  ShardAcknowledgement,
  ShardAssigned,
  ShardLost,
  ShardPosition,
  ShardReleased,
  ShardRevoked,
  StartFrom,
  startFromFromJSON,
  startFromToJSON,
} from './gen/shameless/v1/groups.js';
// Moving shards' messages (moves.proto).
export {
  MoveAbort,
  MoveFinish,
  MovePhase,
  MoveShardsProgress,
  MoveShardsRequest,
  MoveStatus,
  ShardRangeMove,
  ShardSplit,
  movePhaseFromJSON,
  movePhaseToJSON,
} from './gen/shameless/v1/moves.js';
export * from './gen/shameless/v1/store.js';
// ts-proto's service and client, with messages encoded through one reused writer.
export { encodeMessage } from './encodeMessage.js';
export { StoreClient, StoreService } from './storeService.js';
// protoc's own descriptors of the .proto files, for server reflection.
export { fileDescriptorsOf, storeDescriptorSet } from './fileDescriptors.js';
// Cell bodies' MessagePack, read and written exactly (extension types, 64-bit integers).
export * from './messagePack/index.js';
// A CA certificate file checked before Node takes it (the server's flags, the SDK's tls.ca).
export { caFileProblem } from './tls/caCertificates.js';
// TLS credentials that send no server name for an IP address (the SDK's tls, the commands').
export { type TlsFiles, tlsCredentials } from './tls/tlsCredentials.js';
