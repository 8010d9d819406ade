// Starts Swagger UI on the gateway's own OpenAPI document (the page names it in data-openapi-url). A file of its own,
// not an inline script, so the page's Content-Security-Policy can allow scripts from the gateway's origin only.

const root = document.getElementById('swagger-ui');
window.ui = window.SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  domNode: root,
  deepLinking: true,
  // The default would load a validity badge from validator.swagger.io: the page talks to its own origin only.
  validatorUrl: null,
  presets: [window.SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
