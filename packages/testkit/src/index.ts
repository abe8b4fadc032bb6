export { freePort } from './freePort.js';
export {
  startMariaDbServer,
  type MariaDbServer,
  type MariaDbServerOptions,
} from './mariadbServer.js';
export {
  startTcpProxy,
  type DelayFault,
  type ProxyFaults,
  type TcpProxy,
  type TcpProxyOptions,
  type TcpProxyStats,
} from './tcpProxy.js';
export {
  createTestDatabases,
  mysqlUrlFromEnv,
  type TestDatabaseOptions,
  type TestDatabases,
} from './testDatabase.js';
export {
  CONTAINER_IMAGE,
  LOCAL_MYSQL_URL,
  chooseTestMysql,
  testMysqlUrl,
  type TestMysql,
  type TestMysqlOptions,
  type TestMysqlSource,
} from './testMysql.js';
export { startListeningProcess, type ListeningProcess } from './listeningProcess.js';
export { makeTestCertificates, type TestCertificates } from './certificates.js';
export {
  startReplicatedMariaDb,
  type ReplicaStatus,
  type ReplicatedMariaDb,
  type ReplicatedMariaDbOptions,
} from './replicatedMariaDb.js';
export {
  startGaleraCluster,
  type GaleraCluster,
  type GaleraClusterOptions,
  type GaleraNode,
  type GaleraNodeStatus,
} from './galeraCluster.js';
export {
  readStatementCounts,
  watchStatements,
  type StatementCounts,
  type StatementDeltas,
} from './statementCounts.js';
