/**
 * Who calls the gateway: the principal an API key stands for. A principal sees and acts on the runs it
 * started only; an admin key's principal sees every run.
 */
export interface Principal {
  name: string;
  admin: boolean;
}
