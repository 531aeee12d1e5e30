// Reads the operator's Settings (gpustack.ai/v1 Setting objects in the operator namespace); a
// setting with no object takes its documented default.
import { type SettingName, settingDefaults } from '../api/setting.ts';
import type { Setting } from '../api/types.ts';
import type { Informer } from '../kube/informer.ts';
import type { InformerFactory } from '../kube/informer-factory.ts';

export class Settings {
  readonly informer: Informer<Setting>;
  private readonly namespace: string;

  constructor(informers: InformerFactory, namespace: string) {
    this.namespace = namespace;
    this.informer = informers.get<Setting>({ apiVersion: 'gpustack.ai/v1', kind: 'Setting', namespace });
  }

  get(name: SettingName): string {
    return this.informer.get(name, this.namespace)?.spec.value ?? settingDefaults[name];
  }

  bool(name: SettingName): boolean {
    return this.get(name).trim().toLowerCase() === 'true';
  }

  /** A comma-separated setting's entries, trimmed, empty ones dropped. */
  list(name: SettingName): string[] {
    return this.get(name)
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
  }
}
