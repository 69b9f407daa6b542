// DynamoDB Local listening on one address only (local/dynamodb_local.py runs this file with
// `java`, which compiles a single source file in memory: nothing is built or written).
//
// DynamoDB Local has no option for the address it listens on: its own main() starts a Jetty
// server on every interface, so anyone on the network could read and change every table of
// local mode (whose gateway refuses other hosts). This starts the same server from the same
// command line arguments, with its one connector bound to the address given first. Nothing
// else changes; no telemetry is configured (its own main() would send some unless told not to).
//
// Usage: java -cp DynamoDBLocal.jar DynamoDBLocalOnLoopback.java 127.0.0.1 -port 8001 ...

import java.lang.reflect.Field;
import java.util.Arrays;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class DynamoDBLocalOnLoopback {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: DynamoDBLocalOnLoopback <address> [DynamoDB Local options]");
      System.exit(2);
    }
    String host = args[0];
    DynamoDBProxyServer proxy =
        ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
    // The Jetty server is a private field: if a release renames it, this fails at start (and
    // local mode says so) rather than listen on every interface.
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) throw new IllegalStateException("DynamoDB Local has no connector");
    for (Connector connector : connectors) ((ServerConnector) connector).setHost(host);
    proxy.start();
  }
}
